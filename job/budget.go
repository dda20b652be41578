package job

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"slices"
	"strings"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
	"github.com/dptune/dptune/runner"
)

// charge is a job's reservation in the curator's budget file (none when the
// job has no budget file) and the worst case it reserved.
type charge struct {
	r     *budget.Reservation
	worst accounting.Ledger
	// whole settles the reservation with worst whatever the job spent (a
	// resume's separate charge for the steps it runs).
	whole bool
}

// reserve charges worst, the most the job can spend, to the budget file at
// path (if any) before the job touches the data; seeded jobs are refused,
// since they reuse their noise streams across runs, which no composition
// counts. A job the budget cannot afford, or a budget file of another
// dataset, is refused with an error wrapping ErrInvalid and
// budget.ErrExceeded or budget.ErrOtherDataset. End the charge with done, whatever
// happens.
func reserve(path string, seeded bool, dataset, command, label string, worst accounting.Ledger) (*charge, error) {
	return reserveBound(path, seeded, dataset, command, label, "", worst)
}

// reserveBound is reserve for a run that keeps a checkpoint: binding ties
// the reservation to it (budget.ReserveBound). A budget file that does not
// exist is refused like any other request that cannot be met.
func reserveBound(path string, seeded bool, dataset, command, label, binding string, worst accounting.Ledger) (*charge, error) {
	if path == "" {
		return &charge{}, nil
	}
	if seeded {
		return nil, invalidf("a budget file does not take a seed: seeded runs reuse their noise across runs, which the budget cannot count; run unseeded")
	}
	r, err := budget.ReserveBound(path, dataset, command, label, binding, worst)
	if errors.Is(err, budget.ErrExceeded) || errors.Is(err, budget.ErrOtherDataset) || errors.Is(err, fs.ErrNotExist) {
		return nil, invalid(err)
	}
	if err != nil {
		return nil, err
	}
	return &charge{r: r, worst: worst}, nil
}

// reserveFor is reserve for a job whose runs go to run: when run is a
// durable runner resuming an invocation, the reservation its first process
// made is taken over instead of charging the same runs again. On a keyed
// runner the label names the invocation (invocationTag of its key), so the
// only reservation a resumed invocation can take over is one made under
// its own key: never a stale reservation of a local run, of another
// invocation, or of an earlier invocation into the same output directory
// with the same label and worst case.
func reserveFor(run runner.Runner, path string, seeded bool, dataset, command, label string, worst accounting.Ledger) (*charge, error) {
	k, keyed := run.(runner.Keyed)
	if keyed {
		label += " [invocation " + invocationTag(k.Key()) + "]"
	}
	if keyed && k.Resumed() && path != "" && !seeded {
		r, found, err := budget.Attach(path, dataset, command, label, worst)
		if errors.Is(err, budget.ErrOtherDataset) {
			return nil, invalid(err)
		}
		if err != nil {
			return nil, err
		}
		if found {
			return &charge{r: r, worst: worst}, nil
		}
	}
	return reserve(path, seeded, dataset, command, label, worst)
}

// done records what the job spent in its reservation and returns err (the
// job's own error) unless recording fails. A cancelled job stays charged at
// its worst case: when to stop may have followed what the curator saw (the
// training loss is not private), so the steps not taken are not refunded.
func (c *charge) done(spent accounting.Ledger, err error) error {
	if c == nil || c.r == nil {
		return err
	}
	if errors.Is(err, context.Canceled) || c.whole {
		spent = c.worst
	}
	if cerr := c.r.Commit(spent); cerr != nil {
		return errors.Join(err, uncommittedError{cerr})
	}
	return err
}

// invocationTag names a keyed invocation in the budget file: the first 8
// bytes of SHA-256 of a domain tag and its key, in hex. The key stays
// secret (a preimage of SHA-256); two invocations' tags differ but with
// probability 2⁻⁶⁴ per pair.
func invocationTag(key [32]byte) string {
	h := sha256.New()
	h.Write([]byte("dptune budget invocation tag\x00"))
	h.Write(key[:])
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// ErrUncommitted is wrapped by the error of a job whose spending could not
// be recorded in its budget file (the reservation is missing, was already
// committed — e.g. by another process that attached to it — or the file
// could not be written): its worst case stays charged, and Train and Tune
// return no release, since nothing may be released that the budget file
// does not record.
var ErrUncommitted = errors.New("the budget file did not record this release")

type uncommittedError struct{ err error }

func (e uncommittedError) Error() string {
	return "nothing released: " + e.err.Error()
}
func (e uncommittedError) Unwrap() []error { return []error{ErrUncommitted, e.err} }

// withheld returns no release when err says its charge was not recorded.
func withheld(rel *Release, diag *NotPrivateDiagnostics, err error) (*Release, *NotPrivateDiagnostics, error) {
	if errors.Is(err, ErrUncommitted) {
		return nil, nil, err
	}
	return rel, diag, err
}

// ledgerOf is a ledger of one event.
func ledgerOf(label string, e accounting.Event) accounting.Ledger {
	var l accounting.Ledger
	l.Add(label, e)
	return l
}

// finiteEpsilon returns g's ε for a report, or nil and a note when the
// accountant could not bound it: JSON has no +Inf, and a report is always
// written.
func finiteEpsilon(g accounting.Guarantee, err error) (eps *float64, order float64, note string) {
	switch {
	case err != nil:
		return nil, 0, "no ε: " + err.Error()
	case g.Epsilon > 1e308:
		return nil, 0, "unbounded: the " + g.Accountant + " accountant finds no finite ε at this δ (too little noise)"
	}
	return &g.Epsilon, g.Order, ""
}

// Accountant returns the accountant called name ("" means "rdp"), as
// registered in package accounting (accounting.Register): one with a proved
// upper bound ("rdp", "pld"), or, only when approximate is true (for
// reporting, never for calibrating a run), an approximation ("gdp", whose
// central limit theorem is not an upper bound). It returns an error
// wrapping ErrInvalid, naming the accepted names, otherwise.
func Accountant(name string, approximate bool) (accounting.Accountant, error) {
	acc, err := accounting.ByName(name, approximate)
	if err != nil {
		return nil, invalid(err)
	}
	return acc, nil
}

// LoadBudget reads the budget file at path (budget.Load).
func LoadBudget(path string) (*budget.Budget, error) { return budget.Load(path) }

// BudgetRequest is a new budget file as a person asks for it (the flags of
// dptune budget init, whose names Given and the errors speak): the cap
// Epsilon at Delta for the dataset called Dataset (a registered one, or
// "folder:NAME" for an image folder), NominalSize, when given, the public
// size N of its training set (required for an image folder).
type BudgetRequest struct {
	Epsilon, Delta float64
	Dataset        string
	NominalSize    int
	// Given are the settings given explicitly, by flag name.
	Given Given
}

// Init checks r and creates the budget file at path (budget.Init). It
// refuses, before anything is written, with an error wrapping ErrInvalid
// that names the flag at fault: a cap or dataset not given (a budget has no
// default), ε or δ out of range, an unknown dataset, an image folder's
// without a nominal size, a nominal size below 1, δ ≥ 1/N (which allows
// releasing one example outright), and a file that exists.
func (r BudgetRequest) Init(path string) error {
	for _, name := range []string{"epsilon", "delta", "dataset"} {
		if !r.Given[name] {
			return invalidf("budget init needs --%s (a budget has no default cap)", name)
		}
	}
	if err := accounting.CheckEpsilon(r.Epsilon); err != nil {
		return invalidf("--epsilon: %v", err)
	}
	if err := accounting.CheckDelta(r.Delta); err != nil {
		return invalidf("--delta: %v", err)
	}
	n, _ := NominalSize(r.Dataset)
	switch names := data.Names(); {
	case IsFolderDatasetName(r.Dataset):
		if err := CheckFolderDatasetName(r.Dataset); err != nil {
			return err
		}
		if !r.Given["nominal-size"] {
			return invalidf("budget init --dataset %s needs --nominal-size: the public number of training images, as its runs declare it", r.Dataset)
		}
	case !slices.Contains(names, r.Dataset):
		return invalidf("unknown dataset %q (want one of %s or folder:NAME)", r.Dataset, strings.Join(names, ", "))
	}
	size := "the published size"
	if r.Given["nominal-size"] {
		if r.NominalSize < 1 {
			return invalidf("--nominal-size %d: a size is at least 1", r.NominalSize)
		}
		n, size = r.NominalSize, "the nominal size"
	}
	if !(r.Delta < 1/float64(n)) {
		return invalidf("--delta %g must be below 1/N = %.3g, N = %d %s of %s (a δ of 1/N allows releasing one example outright)", r.Delta, 1/float64(n), n, size, r.Dataset)
	}
	if err := budget.Init(path, r.Epsilon, r.Delta, r.Dataset); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return invalid(err)
		}
		return err
	}
	return nil
}
