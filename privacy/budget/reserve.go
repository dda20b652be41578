package budget

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/dptune/dptune/privacy/accounting"
)

// Reservation is a release charged to a budget file at its worst case by
// Reserve, waiting for Commit.
type Reservation struct {
	path, id string
}

// ID is the release's id in the file.
func (r *Reservation) ID() string { return r.id }

// Path is the budget file's path.
func (r *Reservation) Path() string { return r.path }

// exceededError is a one-line message that wraps ErrExceeded.
type exceededError struct{ msg string }

func (e exceededError) Error() string { return e.msg }
func (e exceededError) Unwrap() error { return ErrExceeded }

// otherDatasetError is a one-line message that wraps ErrOtherDataset.
type otherDatasetError string

func (e otherDatasetError) Error() string { return string(e) }
func (e otherDatasetError) Unwrap() error { return ErrOtherDataset }

// Reserve charges a run to the budget file at path before the run touches
// the data: worst is the ledger of the most the run can spend (e.g. every
// step, every tuning run). Under an exclusive lock on path+".lock" it loads
// the file, checks that it is the budget of dataset, computes worst's RDP at
// the file's orders, and — if the filter's total with it stays within the
// cap — appends the release with status "reserved" and replaces the file
// atomically.
//
// It returns an error naming the file for an unreadable or invalid file, a
// dataset other than the file's (wrapping ErrOtherDataset), a ledger the RDP accountant cannot count
// (wrapping accounting.ErrUnsupported), and a run that does not fit: that
// error wraps ErrExceeded, says how much remains, and leaves the file
// unchanged.
func Reserve(path, dataset, command, label string, worst accounting.Ledger) (*Reservation, error) {
	return ReserveBound(path, dataset, command, label, "", worst)
}

// ReserveBound is Reserve for a run that can be resumed from a checkpoint:
// binding (a digest of the checkpointed run's settings, noise multiplier
// and steps) is recorded with the reservation, and Settle, called by the
// resume, settles the reservation only if the resume's checkpoint has the
// same binding.
func ReserveBound(path, dataset, command, label, binding string, worst accounting.Ledger) (*Reservation, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("budget %s: %w", path, pathless(err))
	}
	unlock, err := lock(path)
	if err != nil {
		return nil, fmt.Errorf("budget %s: locking: %w", path, pathless(err))
	}
	defer unlock()
	b, err := Load(path)
	if err != nil {
		return nil, err
	}
	if dataset != b.Dataset {
		return nil, otherDatasetError(fmt.Sprintf("budget %s is the budget of dataset %q, not %q", path, b.Dataset, dataset))
	}
	rdp, raw, err := curve(b.Orders, worst)
	if err != nil {
		return nil, fmt.Errorf("budget %s: this run's ledger: %w", path, err)
	}
	before := b.Spent()
	after, _ := FilterEpsilon(b.Orders, addCurve(b.totals(), rdp), b.Delta)
	if !(after <= b.Epsilon) {
		return nil, exceededError{refusal(b, after-before, before)}
	}
	id, err := newID()
	if err != nil {
		return nil, fmt.Errorf("budget %s: %w", path, err)
	}
	f := b.file
	f.Releases = append(append([]releaseJSON(nil), f.Releases...), releaseJSON{
		ID:      id,
		Time:    time.Now().UTC().Format(time.RFC3339),
		Command: command,
		Label:   label,
		Status:  Reserved,
		Ledger:  raw,
		RDP:     toNums(rdp),
		Epsilon: num(releaseEpsilon(b.Orders, rdp, b.Delta)),
		Binding: binding,
	})
	if err := write(path, f); err != nil {
		return nil, err
	}
	return &Reservation{path: path, id: id}, nil
}

// refusal is the one-line message for a run that does not fit.
func refusal(b *Budget, more, spent float64) string {
	left := b.Epsilon - spent
	if left > 0 {
		return fmt.Sprintf("budget %s: this run needs up to ε = %.3g more but only %.3g of %.3g remains (filter total at δ = %g)",
			b.Path, more, left, b.Epsilon, b.Delta)
	}
	return fmt.Sprintf("budget %s: this run needs up to ε = %.3g more but nothing of %.3g remains (filter total %.3g at δ = %g)",
		b.Path, more, b.Epsilon, spent, b.Delta)
}

// Commit records what the reserved run actually spent: under the lock it
// loads the file, replaces the reservation's ledger, RDP and ε with
// actual's, sets its status to "done", and replaces the file atomically.
//
// actual may be smaller than the reservation (an interrupted run, a tuner
// that stopped early on public information). If it is larger at some order,
// Commit still records it — the spending happened — and then returns an
// error wrapping ErrExceeded. If the reservation is not in the file (the
// file was replaced or edited since Reserve), if it was already committed,
// or if the RDP accountant cannot count actual, Commit returns an error
// naming the file and changes nothing: the worst case stays charged.
//
// A run that never commits (killed with SIGKILL, crashed) leaves its
// worst-case reservation charged for good; the file may over-count but
// never under-count.
func (r *Reservation) Commit(actual accounting.Ledger) error {
	unlock, err := lock(r.path)
	if err != nil {
		return fmt.Errorf("budget %s: locking: %w", r.path, pathless(err))
	}
	defer unlock()
	b, err := Load(r.path)
	if err != nil {
		return err
	}
	i := -1
	for k, rel := range b.Releases {
		if rel.ID == r.id {
			i = k
		}
	}
	if i < 0 {
		return fmt.Errorf("budget %s was modified concurrently: reservation %s not found", r.path, r.id)
	}
	if b.Releases[i].Status != Reserved {
		return fmt.Errorf("budget %s: reservation %s was already committed", r.path, r.id)
	}
	rdp, raw, err := curve(b.Orders, actual)
	if err != nil {
		return fmt.Errorf("budget %s: committing reservation %s (its worst case stays charged): %w", r.path, r.id, err)
	}
	worst := b.Releases[i].RDP
	over := false
	for j := range rdp {
		over = over || (rdp[j] > worst[j] && !sameValue(rdp[j], worst[j]))
	}
	f := b.file
	f.Releases = append([]releaseJSON(nil), f.Releases...)
	rel := f.Releases[i]
	rel.Status, rel.Ledger, rel.RDP = Done, raw, toNums(rdp)
	rel.Epsilon = num(releaseEpsilon(b.Orders, rdp, b.Delta))
	f.Releases[i] = rel
	if err := write(r.path, f); err != nil {
		return err
	}
	if over {
		b.Releases[i].RDP = rdp
		spent := b.Spent()
		note := ""
		if !(spent <= b.Epsilon) {
			note = ", over the cap"
		}
		return exceededError{fmt.Sprintf("budget %s: run %s spent more than it reserved (ε = %.3g alone, reserved %.3g); recorded: the filter total is now %.3g of %.3g%s",
			r.path, r.id, float64(rel.Epsilon), b.Releases[i].Epsilon, spent, b.Epsilon, note)}
	}
	return nil
}

// curve returns the RDP of ledger at orders and the ledger's JSON. The RDP
// is computed from the ledger decoded back from that JSON — what Load will
// recompute — and must agree with the ledger as given.
func curve(orders []float64, ledger accounting.Ledger) ([]float64, json.RawMessage, error) {
	direct, err := accounting.RDP{Orders: orders}.RDP(ledger.Event())
	if err != nil {
		return nil, nil, err
	}
	raw, err := json.Marshal(ledger)
	if err != nil {
		return nil, nil, err
	}
	var back accounting.Ledger
	if err := json.Unmarshal(raw, &back); err != nil {
		return nil, nil, err
	}
	rdp, err := accounting.RDP{Orders: orders}.RDP(back.Event())
	if err != nil {
		return nil, nil, err
	}
	for j := range rdp {
		if !(rdp[j] >= 0) {
			return nil, nil, fmt.Errorf("RDP %v at order %v is not a non-negative number", rdp[j], orders[j])
		}
		if !sameValue(rdp[j], direct[j]) {
			return nil, nil, fmt.Errorf("the ledger does not survive its JSON encoding (RDP %v at order %v before, %v after)", direct[j], orders[j], rdp[j])
		}
	}
	return rdp, raw, nil
}

// write seals f and replaces the file at path with it.
func write(path string, f fileJSON) error {
	data, err := encode(f)
	if err != nil {
		return fmt.Errorf("budget %s: encoding: %w", path, err)
	}
	if err := replaceFile(path, data); err != nil {
		return fmt.Errorf("budget %s: writing: %w", path, pathless(err))
	}
	return nil
}

// newID returns 16 random bytes in hex.
func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// Attach returns the reservation a resumed run left in the budget file at
// path: the last release still "reserved" with the same command and label
// whose worst case has the same RDP curve as worst (so it covers this run
// exactly). A durable runner's invocation resumed by a new process attaches
// to its first process's reservation instead of charging the same runs
// twice; the caller must make label name that invocation alone (e.g. a tag
// of its key), since any reserved release with the same command, label and
// worst case is taken — two runs sharing one reservation would have one
// charge for two releases (the second's Commit fails: already committed).
// found is false (and nothing changes) when there is none.
func Attach(path, dataset, command, label string, worst accounting.Ledger) (r *Reservation, found bool, err error) {
	unlock, err := lock(path)
	if err != nil {
		return nil, false, fmt.Errorf("budget %s: locking: %w", path, pathless(err))
	}
	defer unlock()
	b, err := Load(path)
	if err != nil {
		return nil, false, err
	}
	if dataset != b.Dataset {
		return nil, false, otherDatasetError(fmt.Sprintf("budget %s is the budget of dataset %q, not %q", path, b.Dataset, dataset))
	}
	rdp, _, err := curve(b.Orders, worst)
	if err != nil {
		return nil, false, fmt.Errorf("budget %s: this run's ledger: %w", path, err)
	}
	for k := len(b.Releases) - 1; k >= 0; k-- {
		rel := b.Releases[k]
		if rel.Status != Reserved || rel.Command != command || rel.Label != label || len(rel.RDP) != len(rdp) {
			continue
		}
		same := true
		for j := range rdp {
			same = same && sameValue(rdp[j], rel.RDP[j])
		}
		if same {
			return &Reservation{path: path, id: rel.ID}, true, nil
		}
	}
	return nil, false, nil
}

// Settle ends the reservation a killed run left in the budget file at path
// at its worst case: the last release still "reserved" with the same
// command and label is marked "done" with the ledger it reserved, so it
// can never be settled lower. A resumed run calls it before it touches the
// data, whatever happens next, and then reserves the steps it runs itself:
// the file never counts less than what ran. The reservation must carry
// binding (ReserveBound); one with another binding is an error naming both
// (the checkpoint is not the one the reservation was made for), and
// nothing changes. found is false (and nothing changes) when there is no
// such reservation: the run settled its own charge (an interrupted run) or
// an earlier resume settled it.
func Settle(path, dataset, command, label, binding string) (found bool, err error) {
	unlock, err := lock(path)
	if err != nil {
		return false, fmt.Errorf("budget %s: locking: %w", path, pathless(err))
	}
	defer unlock()
	b, err := Load(path)
	if err != nil {
		return false, err
	}
	if dataset != b.Dataset {
		return false, otherDatasetError(fmt.Sprintf("budget %s is the budget of dataset %q, not %q", path, b.Dataset, dataset))
	}
	for k := len(b.Releases) - 1; k >= 0; k-- {
		rel := b.Releases[k]
		if rel.Status != Reserved || rel.Command != command || rel.Label != label {
			continue
		}
		if rel.Binding != binding {
			return false, fmt.Errorf("budget %s: reservation %s was made for another run (binding %q, the checkpoint's %q): not settled", path, rel.ID, rel.Binding, binding)
		}
		f := b.file
		f.Releases = append([]releaseJSON(nil), f.Releases...)
		f.Releases[k].Status = Done
		if err := write(path, f); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}
