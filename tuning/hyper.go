package tuning

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// The dimensions a DP-SGD run's candidate may set beside LearningRate and
// ClipNorm. A candidate that leaves one out runs at the tuning's own value.
const (
	Momentum   = "momentum"    // SGD momentum μ ∈ [0, 1)
	BatchSize  = "batch_size"  // expected batch size qN: an integer ≥ 1
	Epochs     = "epochs"      // epochs over the training set: an integer ≥ 1
	LRSchedule = "lr_schedule" // categorical: "constant" or "cosine" (dpsgd.ParseSchedule)
	Network    = "network"     // categorical: built-in network names or .json network specs
)

// dpsgdDims are the dimensions the DP-SGD trainers know, and whether each is
// categorical.
var dpsgdDims = map[string]bool{LearningRate: false, ClipNorm: false, Momentum: false, BatchSize: false, Epochs: false,
	LRSchedule: true, Network: true}

// shapeDims are the dimensions that change a run's privacy event.
var shapeDims = []string{BatchSize, Epochs, Network}

// MaxRunShapes bounds the distinct privacy events of a space's runs (the
// combinations of its batch sizes, epochs and networks): the tuning's
// event holds each of them (accounting.WorstCase).
const MaxRunShapes = 256

// maxBatchSize bounds a batch-size value (a nominal size is an int32 count
// at most).
const maxBatchSize = math.MaxInt32

// CheckDPSGDSpace returns Check's error, or an error if s is not a space the
// DP-SGD trainers (DPSGDTrainer, PartitionScorer, the doubling tuner's final
// run) understand: a dimension other than LearningRate, ClipNorm, Momentum,
// BatchSize, Epochs, LRSchedule and Network; a categorical LRSchedule or
// Network given as numbers, or a numeric dimension given as choices; a
// learning rate or clipping norm that is not positive and finite; a
// momentum outside [0, 1); a batch size or an epoch count that is not a
// whole number ≥ 1; a schedule that is not "constant" or "cosine"; or more
// than MaxRunShapes combinations of batch sizes, epochs and networks. The
// errors name the dimension and the offending value. The networks' names
// are checked where they are resolved (the job), and each combination of
// batch size and epochs against the training set's size by
// Hyper.CheckRuns.
func CheckDPSGDSpace(s Space) error {
	if err := s.Check(); err != nil {
		return err
	}
	shapes := 1
	for _, d := range s.Dims {
		categorical, known := dpsgdDims[d.Name]
		switch {
		case !known:
			names := make([]string, 0, len(dpsgdDims))
			for n := range dpsgdDims {
				names = append(names, fmt.Sprintf("%q", n))
			}
			slices.Sort(names)
			return fmt.Errorf("search space %s: unknown dimension %q (the DP-SGD trainer knows %s)", s.Name, d.Name, strings.Join(names, ", "))
		case categorical && d.Choices == nil:
			return fmt.Errorf("search space %s: dimension %q is categorical: give its values as \"choices\"", s.Name, d.Name)
		case !categorical && d.Choices != nil:
			return fmt.Errorf("search space %s: dimension %q is numeric: give its values as \"values\" or min/max/count", s.Name, d.Name)
		}
		for i, v := range d.Values {
			var bad string
			switch d.Name {
			case LearningRate, ClipNorm:
				if !(v > 0) || math.IsInf(v, 1) {
					bad = "must be positive and finite"
				}
			case Momentum:
				if !(v >= 0 && v < 1) {
					bad = "must be in [0, 1)"
				}
			case BatchSize, Epochs:
				if !(v >= 1 && v <= maxBatchSize) || v != math.Trunc(v) {
					bad = fmt.Sprintf("must be a whole number in [1, %d]", maxBatchSize)
				}
			case LRSchedule:
				if _, err := dpsgd.ParseSchedule(d.Choices[i]); err != nil {
					return fmt.Errorf("search space %s: dimension %q: %v", s.Name, d.Name, err)
				}
			}
			if bad != "" {
				return fmt.Errorf("search space %s: dimension %q has value %v: %s", s.Name, d.Name, v, bad)
			}
		}
		if slices.Contains(shapeDims, d.Name) {
			shapes *= len(d.Values)
			if shapes > MaxRunShapes {
				return fmt.Errorf("search space %s: more than %d combinations of %s: each is a different privacy event", s.Name, MaxRunShapes, strings.Join(shapeDims, ", "))
			}
		}
	}
	return nil
}

// OtherSettings lists a selected candidate's dimensions other than
// LearningRate and ClipNorm, sorted by name, as "name value" pairs joined
// by ", ", a categorical one by its choice's name (labels): "" when it has
// none.
func OtherSettings(values map[string]float64, labels map[string]string) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if name == LearningRate || name == ClipNorm {
			continue
		}
		if l, ok := labels[name]; ok {
			out = append(out, name+" "+l)
		} else {
			out = append(out, fmt.Sprintf("%s %.4g", name, values[name]))
		}
	}
	return strings.Join(out, ", ")
}

// RunsVary reports whether s has a BatchSize, Epochs or Network dimension:
// its candidates' runs may differ in sampling rate, steps or network, and
// so in privacy cost (Hyper.Event).
func RunsVary(s Space) bool {
	return slices.ContainsFunc(s.Dims, func(d Dim) bool { return slices.Contains(shapeDims, d.Name) })
}

// Covers returns an error unless candidate c's batch size, epochs and
// network are values of s's dimensions, so that Event(s, σ) counts c's
// run: a trainer refuses to train any other.
func Covers(s Space, c Candidate) error {
	for _, name := range shapeDims {
		v, ok := c.Values[name]
		if !ok {
			continue
		}
		i := slices.IndexFunc(s.Dims, func(d Dim) bool { return d.Name == name })
		if i < 0 {
			return fmt.Errorf("tuning: candidate %d sets %s, which the trainer's space %q does not have: its run would not be counted", c.Index, name, s.Name)
		}
		d := s.Dims[i]
		j := slices.Index(d.Values, v)
		if j < 0 || (d.Choices != nil && c.Labels[name] != d.Choices[j]) {
			return fmt.Errorf("tuning: candidate %d sets %s to %v, not a value of the trainer's space %q: its run would not be counted", c.Index, name, v, s.Name)
		}
	}
	return nil
}

// Hyper turns a candidate into one DP-SGD run: the network it trains and
// its dpsgd.Config. What the candidate leaves out is the tuning's own.
type Hyper struct {
	// Arch is the network of a candidate without a Network dimension.
	Arch model.Arch
	// Networks are the Network dimension's choices, resolved (each must
	// read the same inputs as Arch: model.Arch.SameInput).
	Networks map[string]model.Arch
	// Config is the run of a candidate that sets nothing: its
	// SamplingRate, ExpectedBatchSize, Steps, LearningRate, ClipNorm,
	// Momentum and Schedule. The noise multiplier, seed, key and noise
	// mode are the caller's.
	Config dpsgd.Config
	// NominalN is the nominal (public) training-set size: a candidate's
	// batch size B runs at sampling rate B/NominalN and divides its noisy
	// sum by B. Zero refuses a BatchSize dimension.
	NominalN int
	// Epochs are Config's: a candidate that sets a batch size but not the
	// epochs runs this many. Zero refuses a BatchSize dimension without an
	// Epochs one.
	Epochs int
	// Default, if not nil, is a candidate the tuning may run beside the
	// space's (DefaultCandidate): Event and CheckRuns cover its run too.
	Default *Candidate
	// Norm, if not nil, is the tuning's one private data normalisation
	// (SharedDataNorm): a run of a network whose datanorm layer is Norm's
	// mechanism takes Norm's released estimate instead of estimating its
	// own, and its event is its steps alone.
	Norm *SharedDataNorm
	// Subsample q ∈ (0, 1], if not 0, is the ratio of the tuning subset
	// the runs train on (Koskela & Kulkarni 2023: a Poisson subsample of
	// about q·NominalN examples, drawn once for the whole selection). A
	// candidate keeps its sampling rate B/NominalN and its epochs, so its
	// steps (and its event) are those of the same candidate on the whole
	// set, and its expected batch (the divisor of the noisy sum) is q·B:
	// the selected settings carry over to the whole set unchanged
	// (SubsampleRule).
	Subsample float64
}

// SharedDataNorm is a tuning's one private data normalisation: the
// statistics of the networks' datanorm layer estimated once on the
// tuning's training data before any run (dpsgd.EstimateDataNorm), counted
// once in the ledger as its own event (Event), and released to every run
// of a network with that layer — candidate runs and the final run — as a
// public input: their use of it is post-processing, so their events are
// their steps (and scores) alone.
type SharedDataNorm struct {
	// Mechanism is the datanorm layer's estimation (its privacy-spending
	// stage, dpsgd.Stages): its noise multiplier and clipping norms. Only
	// a network whose one stage has exactly this mechanism takes the
	// estimate (Covers).
	Mechanism dpsgd.DataNorm `json:"mechanism"`
	// Estimate is the released statistics, nil until the tuning has
	// estimated them (a run of such a network before then is refused).
	Estimate *dpsgd.DataNormEstimate `json:"estimate,omitempty"`
}

// Event is the estimate's privacy cost (dpsgd.DataNorm.Event).
func (n SharedDataNorm) Event() accounting.Event { return n.Mechanism.Event() }

// Covers reports whether a run of arch takes n's estimate: its one
// privacy-spending stage (dpsgd.Stages) is n's mechanism.
func (n SharedDataNorm) Covers(arch model.Arch) bool {
	st := dpsgd.Stages(arch)
	return len(st) == 1 && st[0].Mechanism == dpsgd.Mechanism(n.Mechanism)
}

// released is what a run that n covers takes (dpsgd.Config.Released): n's
// estimate, none until the tuning has estimated it (dpsgd.Train then
// refuses the run).
func (n SharedDataNorm) released() *dpsgd.Released {
	r := &dpsgd.Released{}
	if n.Estimate != nil {
		r.Estimates = []dpsgd.Estimate{n.Estimate}
	}
	return r
}

// SharedDataNormOf returns the one data normalisation a tuning of h's
// runs over space s can share: the mechanism of the datanorm layer of
// every candidate's network (the space's and the default's) that has one,
// without an estimate yet; nil when no network has a datanorm layer, or
// when their layers' mechanisms differ (each run then estimates its own,
// counted in its event, as without sharing).
func (h Hyper) SharedDataNormOf(s Space) *SharedDataNorm {
	h.Norm = nil
	var mech *dpsgd.DataNorm
	for _, c := range h.runShapes(s) {
		arch, _, err := h.Run(c)
		if err != nil {
			return nil
		}
		st := dpsgd.Stages(arch)
		if len(st) == 0 {
			continue
		}
		d, ok := st[0].Mechanism.(dpsgd.DataNorm)
		switch {
		case len(st) > 1 || !ok:
			// Another stage than a datanorm layer's: every run estimates
			// its own.
			return nil
		case mech == nil:
			mech = &d
		case *mech != d:
			return nil
		}
	}
	if mech == nil {
		return nil
	}
	return &SharedDataNorm{Mechanism: *mech}
}

// SharedDataNormLabel labels a tuning's one data normalisation in its
// ledger.
const SharedDataNormLabel = "data normalisation, estimated once before the tuning's runs: Gaussian estimate of the datanorm layer's per-channel mean and variance, released to every run"

// Run returns candidate c's network and run. The error names a network
// that is not among Networks, or a batch size or epoch count that cannot
// run (above NominalN, or past dpsgd.MaxSteps).
func (h Hyper) Run(c Candidate) (model.Arch, dpsgd.Config, error) {
	arch, cfg := h.Arch, h.Config
	if name, ok := c.Labels[Network]; ok {
		a, ok := h.Networks[name]
		if !ok {
			return arch, cfg, fmt.Errorf("tuning: candidate %d names network %q, which the tuning did not resolve", c.Index, name)
		}
		arch = a
	}
	if v, ok := c.Values[LearningRate]; ok {
		cfg.LearningRate = v
	}
	if v, ok := c.Values[ClipNorm]; ok {
		cfg.ClipNorm = v
	}
	if v, ok := c.Values[Momentum]; ok {
		cfg.Momentum = v
	}
	if name, ok := c.Labels[LRSchedule]; ok {
		s, err := dpsgd.ParseSchedule(name)
		if err != nil {
			return arch, cfg, err
		}
		cfg.Schedule = s
	}
	b, hasB := c.Values[BatchSize]
	e, hasE := c.Values[Epochs]
	if hasB || hasE {
		epochs := h.Epochs
		if hasE {
			epochs = int(e)
		}
		if hasB {
			if h.NominalN < 1 || b > float64(h.NominalN) {
				return arch, cfg, fmt.Errorf("tuning: candidate %d: batch size %v is outside [1, %d], the nominal training-set size", c.Index, b, h.NominalN)
			}
			cfg.SamplingRate, cfg.ExpectedBatchSize = b/float64(h.NominalN), b
		}
		if epochs < 1 {
			return arch, cfg, fmt.Errorf("tuning: candidate %d sets a batch size but the tuning has no epochs", c.Index)
		}
		if err := dpsgd.CheckEpochs(epochs, cfg.SamplingRate); err != nil {
			return arch, cfg, fmt.Errorf("tuning: candidate %d: %d epochs at batch size %v: %v", c.Index, epochs, cfg.ExpectedBatchSize, err)
		}
		cfg.Steps = dpsgd.StepsForEpochs(epochs, cfg.SamplingRate)
	}
	if h.Subsample > 0 {
		cfg.ExpectedBatchSize *= h.Subsample
	}
	if n := h.Norm; n != nil && n.Covers(arch) {
		// The tuning's released estimate: post-processing, no cost here.
		cfg.Released = n.released()
	}
	return arch, cfg, nil
}

// shapes returns one candidate of s per combination of its batch sizes,
// epochs and networks (at most MaxRunShapes for a space that passed
// CheckDPSGDSpace), with only those dimensions set.
func shapes(s Space) []Candidate {
	out := []Candidate{{Values: map[string]float64{}}}
	for _, d := range s.Dims {
		if !slices.Contains(shapeDims, d.Name) {
			continue
		}
		var next []Candidate
		for _, c := range out {
			for j, v := range d.Values {
				n := Candidate{Values: map[string]float64{d.Name: v}}
				for k, w := range c.Values {
					n.Values[k] = w
				}
				for k, w := range c.Labels {
					if n.Labels == nil {
						n.Labels = map[string]string{}
					}
					n.Labels[k] = w
				}
				if d.Choices != nil {
					if n.Labels == nil {
						n.Labels = map[string]string{}
					}
					n.Labels[d.Name] = d.Choices[j]
				}
				next = append(next, n)
			}
		}
		out = next
	}
	return out
}

// runShapes is shapes(s) and, if not nil, h.Default.
func (h Hyper) runShapes(s Space) []Candidate {
	out := shapes(s)
	if h.Default != nil {
		out = append(out, *h.Default)
	}
	return out
}

// DefaultCandidate is the candidate that runs settings — values by
// dimension name among LearningRate, ClipNorm, Momentum, BatchSize and
// Epochs: a network's published default settings — beside space s's grid,
// at index s.Size(). A dimension it leaves out takes the tuning's own
// value, as for any candidate; its network is the tuning's own (no Network
// label) and its schedule the tuning's. The error, wrapping ErrInvalid,
// names a setting that is not one of those dimensions or whose value such
// a dimension may not take (CheckDPSGDSpace's rules).
func DefaultCandidate(s Space, settings map[string]float64) (Candidate, error) {
	if len(settings) == 0 {
		return Candidate{}, invalidf("the default settings are empty")
	}
	one := Space{Name: "the default settings"}
	for _, name := range slices.Sorted(maps.Keys(settings)) {
		if categorical, known := dpsgdDims[name]; !known || categorical {
			return Candidate{}, invalidf("the default settings name %q: want %s, %s, %s, %s or %s", name, LearningRate, ClipNorm, Momentum, BatchSize, Epochs)
		}
		one.Dims = append(one.Dims, Dim{Name: name, Values: []float64{settings[name]}})
	}
	if err := CheckDPSGDSpace(one); err != nil {
		return Candidate{}, invalid(err)
	}
	return Candidate{Index: s.Size(), Values: maps.Clone(settings)}, nil
}

// isDefault reports whether c is d (not nil): the same values and labels.
func isDefault(c Candidate, d *Candidate) bool {
	return d != nil && maps.Equal(c.Values, d.Values) && maps.Equal(c.Labels, d.Labels)
}

// CheckRuns returns an error if some candidate of s cannot run (Run's
// errors), checked over its combinations of batch sizes, epochs and
// networks.
func (h Hyper) CheckRuns(s Space) error {
	for _, c := range h.runShapes(s) {
		if _, _, err := h.Run(c); err != nil {
			return err
		}
	}
	return nil
}

// Event is the privacy event of one run of any candidate of s at noise
// multiplier sigma (dpsgd.PlannedEvent: the steps and, for a network with
// a privacy-spending stage such as a datanorm layer, its estimate unless
// it takes h.Norm's, counted once by the tuning instead): the run's own
// when every candidate's is the same, else accounting.WorstCase of the
// distinct ones — every run of the tuning then costs the costliest
// candidate's run, since which candidate a run trains is released with it
// or drawn from public randomness.
func (h Hyper) Event(s Space, sigma float64) (accounting.Event, error) {
	var events []accounting.Event
	seen := map[string]bool{}
	for _, c := range h.runShapes(s) {
		arch, cfg, err := h.Run(c)
		if err != nil {
			return nil, err
		}
		cfg.NoiseMultiplier = sigma
		e := dpsgd.PlannedEvent(arch, cfg)
		b, err := accounting.MarshalEvent(e)
		if err != nil {
			return nil, err
		}
		if !seen[string(b)] {
			seen[string(b)] = true
			events = append(events, e)
		}
	}
	if len(events) == 1 {
		return events[0], nil
	}
	return accounting.WorstCase{Events: events}, nil
}
