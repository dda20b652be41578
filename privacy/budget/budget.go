package budget

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"time"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/privacy/accounting"
)

// Version is the budget file format this package reads and writes.
const Version = 1

// MaxFileBytes bounds the size of a budget file Load reads (a file of
// thousands of releases is a few megabytes): a larger file, or a path that
// is not a regular file (a FIFO, a device), is refused before it is read.
const MaxFileBytes = 64 << 20

// ErrOtherDataset is wrapped by the error Reserve and Attach return for a
// budget file of another dataset than the run's.
var ErrOtherDataset = errors.New("a budget file of another dataset")

// ErrExceeded is wrapped by the error Reserve returns for a run that would
// take the filter's total past the cap, and by the error Commit returns
// when a run spent more than it reserved.
var ErrExceeded = errors.New("privacy budget exceeded")

// Status says whether a release's curve is its worst case (Reserved: the run
// has not committed, because it is running or was killed) or what actually
// ran (Done).
type Status string

// The statuses of a release.
const (
	Reserved Status = "reserved"
	Done     Status = "done"
)

// Budget is a snapshot of a budget file, as read and checked by Load.
// Changing it changes nothing on disk: only Reserve and Commit write.
type Budget struct {
	Path    string
	Dataset string
	// Epsilon (nats) and Delta are the cap: the file's releases together
	// are (Epsilon, Delta)-DP.
	Epsilon, Delta float64
	// Orders are the file's fixed RDP orders, each > 1.
	Orders   []float64
	Releases []Release

	file fileJSON // as read, for rewriting
}

// Release is one run charged to the budget.
type Release struct {
	ID      string // random hex
	Time    time.Time
	Command string // e.g. "train", "tune"
	Label   string
	Status  Status
	// Binding, if not "", names the resumable run the release covers
	// (ReserveBound): a resume settles it only when the binding matches.
	Binding string
	// Ledger is the worst case while Status is Reserved, what ran once Done.
	Ledger accounting.Ledger
	// RDP is the ledger's RDP at the file's orders.
	RDP []float64
	// Epsilon is the ε of this release alone at the file's δ, by the
	// non-adaptive RDP conversion (Balle et al. 2020, Theorem 21).
	Epsilon float64
}

// Init creates a budget file at path with cap (epsilon, delta) for the
// named dataset, no releases and DefaultOrders. It never overwrites: an
// existing path gives an error wrapping fs.ErrExist. It returns an error
// for ε ∉ (0, ∞), δ ∉ (0, 1) or an empty dataset name. The file is created
// atomically with mode 0600.
func Init(path string, epsilon, delta float64, dataset string) error {
	if err := accounting.CheckEpsilon(epsilon); err != nil {
		return fmt.Errorf("budget %s: %w", path, err)
	}
	if err := accounting.CheckDelta(delta); err != nil {
		return fmt.Errorf("budget %s: %w", path, err)
	}
	if dataset == "" {
		return fmt.Errorf("budget %s: the dataset name is empty", path)
	}
	data, err := encode(fileJSON{
		Version: Version,
		Dataset: dataset,
		Epsilon: epsilon,
		Delta:   delta,
		Orders:  append([]float64(nil), DefaultOrders...),
	})
	if err != nil {
		return fmt.Errorf("budget %s: %w", path, err)
	}
	if err := createFile(path, data); err != nil {
		return fmt.Errorf("budget %s: %w", path, pathless(err))
	}
	return nil
}

// pathless drops the path from an *fs.PathError or *os.LinkError, whose
// message would repeat the file name every error here starts with.
func pathless(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", pe.Op, pe.Err)
	}
	return err
}

// Load reads and checks the budget file at path. It returns an error naming
// the file (and the release, where one is at fault) for an unreadable file,
// malformed JSON, a version other than Version, a checksum that does not
// match, a bad cap, orders not above 1, or a release whose RDP curve has the
// wrong length, a negative value, or does not match its ledger recomputed
// at the file's orders (within 1e-9 relative). It never repairs anything.
func Load(path string) (*Budget, error) {
	data, err := fsx.ReadFile(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("budget %s: %w", path, pathless(err))
	}
	b, err := parse(path, data)
	if err != nil {
		return nil, fmt.Errorf("budget %s: %w", path, err)
	}
	return b, nil
}

func parse(path string, data []byte) (*Budget, error) {
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not a valid budget file: %w", err)
	}
	if head.Version == nil {
		return nil, errors.New("not a budget file: no version")
	}
	if *head.Version != Version {
		return nil, fmt.Errorf("version %d is not supported (this dptune reads version %d)", *head.Version, Version)
	}
	var f fileJSON
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a valid budget file: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not a valid budget file: data after the JSON object")
	}
	if f.Checksum == "" {
		return nil, errors.New("no checksum")
	}
	sum, err := checksum(f)
	if err != nil {
		return nil, err
	}
	if sum != f.Checksum {
		return nil, fmt.Errorf("checksum mismatch (stored %s, computed %s): the file was changed outside dptune or damaged", f.Checksum, sum)
	}
	if f.Dataset == "" {
		return nil, errors.New("no dataset name")
	}
	if err := accounting.CheckEpsilon(f.Epsilon); err != nil {
		return nil, fmt.Errorf("cap: %w", err)
	}
	if err := accounting.CheckDelta(f.Delta); err != nil {
		return nil, fmt.Errorf("cap: %w", err)
	}
	if len(f.Orders) == 0 {
		return nil, errors.New("no RDP orders")
	}
	for i, a := range f.Orders {
		if !(a > 1) || math.IsInf(a, 1) {
			return nil, fmt.Errorf("RDP order %v is not a finite number above 1", a)
		}
		if i > 0 && !(a > f.Orders[i-1]) {
			return nil, fmt.Errorf("RDP orders are not increasing (%v after %v)", a, f.Orders[i-1])
		}
	}
	b := &Budget{Path: path, Dataset: f.Dataset, Epsilon: f.Epsilon, Delta: f.Delta,
		Orders: append([]float64(nil), f.Orders...), file: f}
	seen := map[string]bool{}
	for i, r := range f.Releases {
		rel, err := checkRelease(f, r)
		if err != nil {
			return nil, fmt.Errorf("release %d (id %q, %s %q): %w", i+1, r.ID, r.Command, r.Label, err)
		}
		if seen[r.ID] {
			return nil, fmt.Errorf("release %d: id %q appears twice", i+1, r.ID)
		}
		seen[r.ID] = true
		b.Releases = append(b.Releases, rel)
	}
	return b, nil
}

// checkRelease checks one release of f and returns it decoded.
func checkRelease(f fileJSON, r releaseJSON) (Release, error) {
	rel := Release{ID: r.ID, Command: r.Command, Label: r.Label, Status: r.Status, Epsilon: float64(r.Epsilon), Binding: r.Binding}
	if r.ID == "" {
		return rel, errors.New("no id")
	}
	t, err := time.Parse(time.RFC3339, r.Time)
	if err != nil {
		return rel, fmt.Errorf("time: %w", err)
	}
	rel.Time = t
	if r.Status != Reserved && r.Status != Done {
		return rel, fmt.Errorf("status %q is neither %q nor %q", r.Status, Reserved, Done)
	}
	if len(r.RDP) != len(f.Orders) {
		return rel, fmt.Errorf("%d RDP values for %d orders", len(r.RDP), len(f.Orders))
	}
	rel.RDP = toFloats(r.RDP)
	for j, v := range rel.RDP {
		if !(v >= 0) {
			return rel, fmt.Errorf("RDP %v at order %v is not a non-negative number", v, f.Orders[j])
		}
	}
	if !(rel.Epsilon >= 0) {
		return rel, fmt.Errorf("ε = %v is not a non-negative number", rel.Epsilon)
	}
	if err := json.Unmarshal(r.Ledger, &rel.Ledger); err != nil {
		return rel, fmt.Errorf("ledger: %w", err)
	}
	want, err := accounting.RDP{Orders: f.Orders}.RDP(rel.Ledger.Event())
	if err != nil {
		return rel, fmt.Errorf("recomputing the ledger's RDP: %w", err)
	}
	for j := range want {
		if !sameValue(rel.RDP[j], want[j]) {
			return rel, fmt.Errorf("stored RDP %v at order %v does not match its ledger's %v", rel.RDP[j], f.Orders[j], want[j])
		}
	}
	if e := releaseEpsilon(f.Orders, rel.RDP, f.Delta); !sameValue(rel.Epsilon, e) {
		return rel, fmt.Errorf("stored ε = %v does not match its RDP curve's %v", rel.Epsilon, e)
	}
	return rel, nil
}

// totals is the per-order sum of every release's RDP.
func (b *Budget) totals() []float64 {
	t := make([]float64, len(b.Orders))
	for _, r := range b.Releases {
		t = addCurve(t, r.RDP)
	}
	return t
}

// Spent is the filter's total ε (FilterEpsilon) of every release in the
// file, reserved ones at their worst case. It is how much of the cap is
// used, not a privacy guarantee by itself: the guarantee is the cap.
func (b *Budget) Spent() float64 {
	eps, _ := FilterEpsilon(b.Orders, b.totals(), b.Delta)
	return eps
}

// Remaining is the cap minus Spent: negative if a run spent more than it
// reserved and took the total past the cap.
func (b *Budget) Remaining() float64 { return b.Epsilon - b.Spent() }

// Report is what Show returns for printing: every release with its own ε,
// the filter's total, and PLD's informational figure.
type Report struct {
	Path    string
	Dataset string
	// Epsilon and Delta are the cap.
	Epsilon, Delta float64
	Orders         []float64
	Releases       []ReleaseReport
	// Spent is the RDP filter's composed total (Budget.Spent), Order the
	// order attaining it (0 if nothing was spent).
	Spent, Order float64
	Remaining    float64
	PLD          PLDReport
}

// ReleaseReport is one release of a Report.
type ReleaseReport struct {
	ID, Command, Label string
	Time               time.Time
	Status             Status
	// Epsilon is the release's ε alone at the file's δ (worst case while
	// Reserved).
	Epsilon float64
}

// PLDReport is the PLD accountant's ε of every release composed, at the
// file's δ. It is informational only: PLD composition does not hold when
// runs are chosen after seeing earlier results, so the budget never uses
// it.
type PLDReport struct {
	// Available is false when the PLD accountant cannot count some event;
	// Reason says why.
	Available bool
	Epsilon   float64
	Reason    string
}

// PLDNote labels the PLD figure wherever it is shown.
const PLDNote = "informational only: PLD composition does not hold when runs are chosen after seeing earlier results; the budget is the RDP filter's"

// Show returns the budget's report. It computes the PLD figure (which may
// take a moment for many releases) when the PLD accountant supports every
// event.
func (b *Budget) Show() Report {
	spent, order := FilterEpsilon(b.Orders, b.totals(), b.Delta)
	r := Report{Path: b.Path, Dataset: b.Dataset, Epsilon: b.Epsilon, Delta: b.Delta,
		Orders: append([]float64(nil), b.Orders...), Spent: spent, Order: order, Remaining: b.Epsilon - spent}
	var events []accounting.Event
	for _, rel := range b.Releases {
		r.Releases = append(r.Releases, ReleaseReport{ID: rel.ID, Command: rel.Command, Label: rel.Label,
			Time: rel.Time, Status: rel.Status, Epsilon: rel.Epsilon})
		events = append(events, rel.Ledger.Event())
	}
	g, err := accounting.PLD{}.Epsilon(accounting.Composed{Events: events}, b.Delta)
	if err != nil {
		r.PLD.Reason = err.Error()
	} else {
		r.PLD = PLDReport{Available: true, Epsilon: g.Epsilon}
	}
	return r
}

// MarshalJSON writes the report with lower-case keys; an infinite ε is the
// string "+Inf" (and an infinitely negative remainder "-Inf").
func (r Report) MarshalJSON() ([]byte, error) {
	type rel struct {
		ID      string `json:"id"`
		Time    string `json:"time"`
		Command string `json:"command"`
		Label   string `json:"label"`
		Status  Status `json:"status"`
		Epsilon num    `json:"epsilon"`
	}
	type pld struct {
		Available bool   `json:"available"`
		Epsilon   *num   `json:"epsilon,omitempty"`
		Reason    string `json:"reason,omitempty"`
		Note      string `json:"note"`
	}
	out := struct {
		Path      string    `json:"path"`
		Dataset   string    `json:"dataset"`
		Epsilon   float64   `json:"epsilon"`
		Delta     float64   `json:"delta"`
		Orders    []float64 `json:"orders"`
		Releases  []rel     `json:"releases"`
		Spent     num       `json:"spent"`
		Order     float64   `json:"order,omitempty"`
		Remaining num       `json:"remaining"`
		PLD       pld       `json:"pld"`
	}{Path: r.Path, Dataset: r.Dataset, Epsilon: r.Epsilon, Delta: r.Delta, Orders: r.Orders,
		Releases: []rel{}, Spent: num(r.Spent), Order: r.Order, Remaining: num(r.Remaining),
		PLD: pld{Available: r.PLD.Available, Reason: r.PLD.Reason, Note: PLDNote}}
	if r.PLD.Available {
		e := num(r.PLD.Epsilon)
		out.PLD.Epsilon = &e
	}
	for _, x := range r.Releases {
		out.Releases = append(out.Releases, rel{x.ID, x.Time.Format(time.RFC3339), x.Command, x.Label, x.Status, num(x.Epsilon)})
	}
	return json.Marshal(out)
}
