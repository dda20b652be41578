package bench

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// CompareRequest is a comparison as a person asks for it (the flags of
// dptune bench compare, by whose names Given and the errors speak): Config
// checks it and makes the CompareConfig, and AddVote runs DP-Hype's table
// beside it.
type CompareRequest struct {
	// Space names the search space ("": scatter-<dataset> for a ScatterNet
	// network, else the dataset's DP-HyPO grid; without a clipping norm
	// dimension under automatic clipping), of which every LRStride-th
	// learning rate and ClipStride-th clipping norm are kept.
	Space                      string
	LRStride, ClipStride       int
	Tuners                     []string  // CompareEntry IDs
	Budgets                    []float64 // total ε in nats
	Delta                      float64
	Seeds                      int // seeds 1, …, Seeds
	Epochs, BatchSize          int
	Momentum, MeanRuns         float64
	ValSize                    int
	ScoreNoise, GridScoreNoise float64
	// Options are the tuners' own settings a comparison takes
	// (CompareOptions), by name; a missing one takes its default.
	Options map[string]any
	// Vote adds DP-Hype's table, on VoteSubset examples of the whole
	// training set, VoteReps votes per seed and budget.
	Vote                 bool
	VoteSubset, VoteReps int
	// TrainSubset (about n examples kept by a public hash; nominal size n)
	// or DevSplit (about n held out as the test set) cut the training set
	// the tunings run on; 0: none.
	TrainSubset, DevSplit int
	// Baselines, References, ReferenceSeeds, CostSitting: as
	// CompareConfig's (References false is NoReferences).
	Baselines, References bool
	ReferenceSeeds        int
	CostSitting           bool
	// DefaultSettings and DefaultSource are the default row's settings
	// (job.ParseTrainDefaults); "": the network's published ones.
	DefaultSettings, DefaultSource string
	// DefaultLabel, if not "", names the default row in the report (e.g.
	// "mis-set: η 8× too small"), for a default that is not the network's
	// published settings; it changes no run.
	DefaultLabel string
	// Clipping, IncludeDefault, DefaultWeight (with IncludeDefault),
	// SelectionShare and Subsample (with SelectionShare) are the
	// comparison-wide options.
	Clipping                                 job.ClippingSettings
	IncludeDefault                           bool
	DefaultWeight, SelectionShare, Subsample float64
	// Out holds compare.json and the cache.
	Out string
	// Given are the settings given explicitly, by flag name.
	Given job.Given
}

// compareSubsetKey keys TrainSubset's and DevSplit's hash. It is public
// (membership is a function of each example) and fixed, so every seed,
// tuner and rerun trains on the same subset.
const compareSubsetKey = 1

// Config checks s for a comparison on src (the dataset as given, before
// TrainSubset or DevSplit) and returns its settings, and the whole training
// set (before TrainSubset) for DP-Hype's table. A built-in ScatterNet
// network's own settings stand for the epochs, batch size and momentum not
// given; without published settings or DefaultSettings, Baselines is
// refused if given, else dropped. Errors wrap job.ErrInvalid and name the
// flag at fault.
func (s CompareRequest) Config(ctx context.Context, src job.Source) (cfg CompareConfig, whole job.Source, err error) {
	if src, whole, err = s.sources(src); err != nil {
		return cfg, whole, err
	}
	if err := s.checkRanges(src.NominalN); err != nil {
		return cfg, whole, err
	}
	options, err := s.optionValues()
	if err != nil {
		return cfg, whole, err
	}
	if err := s.checkBudgets(); err != nil {
		return cfg, whole, err
	}
	entries, err := s.entries()
	if err != nil {
		return cfg, whole, err
	}
	name := s.Space
	if name == "" {
		name = job.DefaultSpaceName(src)
	}
	full, err := job.LoadSpace(name, src.Name)
	if err != nil {
		return cfg, whole, job.Invalid(err)
	}
	if s.Space == "" && s.Clipping.Rule == "automatic" {
		// Automatic clipping has no clipping norm to choose, as for tune; a
		// --space given with one is refused by the job.
		full = job.WithoutClipNorm(full)
	}
	space := Subgrid(full, map[string]int{tuning.LearningRate: s.LRStride, tuning.ClipNorm: s.ClipStride})
	q := float64(s.BatchSize) / float64(src.NominalN-s.ValSize)
	if err := dpsgd.CheckEpochs(s.Epochs, q); err != nil {
		return cfg, whole, job.Invalidf("--epochs %d: %v", s.Epochs, err)
	}
	if err := job.CheckOut(s.Out); err != nil {
		return cfg, whole, job.Invalidf("--out: %v", err)
	}
	def, err := job.ParseTrainDefaults(s.DefaultSettings, s.DefaultSource)
	if err != nil {
		return cfg, whole, err
	}
	if s.DefaultLabel != "" && s.DefaultSettings == "" {
		return cfg, whole, job.Invalidf("--default-label names a default given by --default-settings: the network's published settings need no label")
	}
	cfg = CompareConfig{Data: src, Space: space, Entries: entries, Budgets: s.Budgets, Delta: s.Delta, Seeds: CompareSeeds(s.Seeds),
		Epochs: s.Epochs, BatchSize: s.BatchSize, Momentum: s.Momentum, MeanRuns: s.MeanRuns, ValSize: s.ValSize, ScoreNoise: s.ScoreNoise,
		GridScoreNoise: s.GridScoreNoise, Options: options, Dir: s.Out, Baselines: s.Baselines, Default: def, ReferenceSeeds: s.ReferenceSeeds,
		NoReferences: !s.References, CostSitting: s.CostSitting, DefaultLabel: s.DefaultLabel}
	cfg.Clipping, cfg.AutoClipGamma, _ = s.Clipping.Resolve(nil, false) // checked by sources
	cfg.IncludeDefault, cfg.SelectionShare, cfg.Subsample = s.IncludeDefault, s.SelectionShare, s.Subsample
	if s.IncludeDefault {
		cfg.DefaultWeight = s.DefaultWeight
	}
	if s.ReferenceSeeds < 0 || s.ReferenceSeeds > s.Seeds {
		return cfg, whole, job.Invalidf("--reference-seeds %d is outside [0, --seeds %d]", s.ReferenceSeeds, s.Seeds)
	}
	if _, ok := job.NetworkDefaultsOn(src.Arch.Spec, src.Name); s.Baselines && def == nil && !ok {
		if s.Given["baselines"] {
			return cfg, whole, job.Invalidf("--baselines: %s has no published settings on %s: give them with --default-settings and --default-source", src.Arch.Spec.Name, src.Name)
		}
		cfg.Baselines = false
	}
	return cfg, whole, nil
}

// CompareSeeds are the seeds 1, …, n of a comparison.
func CompareSeeds(n int) []uint64 {
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	return seeds
}

// sources refuses a budget file and the comparison-wide options' bad
// values first, then returns the training set the tunings run on (a
// TrainSubset or DevSplit of src) and the one DP-Hype's table deals among
// its clients. A built-in ScatterNet network's own settings stand for the
// epochs, batch size and momentum not given, as for tune.
func (s *CompareRequest) sources(src job.Source) (job.Source, job.Source, error) {
	whole := src
	if s.Given["budget"] {
		return src, whole, job.Invalidf("--budget: a benchmark is not a release; it charges no budget file")
	}
	if err := s.checkWide(); err != nil {
		return src, whole, err
	}
	job.RunDefaults(src, s.Given, &s.Epochs, &s.BatchSize, &s.Momentum)
	if s.TrainSubset != 0 && s.DevSplit != 0 {
		return src, whole, job.Invalidf("--dev-split and --train-subset cannot be combined")
	}
	var err error
	if s.TrainSubset != 0 {
		if src, err = src.WithSubset(s.TrainSubset, compareSubsetKey); err != nil {
			return src, whole, job.Invalidf("--train-subset: %v", err)
		}
	}
	if s.DevSplit != 0 {
		if src, err = src.WithDevSplit(s.DevSplit, compareSubsetKey); err != nil {
			return src, whole, job.Invalidf("--dev-split: %v", err)
		}
		whole = src
	}
	return src, whole, nil
}

// checkWide refuses, before any work, the comparison-wide options' bad
// values: a clipping rule other than flat or automatic (and its γ), a
// selection share outside (0, 1), a subsample ratio outside (0, 1] or
// without a selection share, a default weight outside (0, 1) or without
// the default among the candidates.
func (s CompareRequest) checkWide() error {
	g := s.Given
	if _, _, err := s.Clipping.Resolve(g, false); err != nil {
		return err
	}
	switch {
	case g["selection-share"] && !(s.SelectionShare > 0 && s.SelectionShare < 1):
		return job.Invalidf("--selection-share %v is outside (0, 1)", s.SelectionShare)
	case g["subsample"] && !(s.Subsample > 0 && s.Subsample <= 1):
		return job.Invalidf("--subsample %v is outside (0, 1]", s.Subsample)
	case g["subsample"] && !g["selection-share"]:
		return job.Invalidf("--subsample needs --selection-share: the released model is the final run on the whole set")
	case g["default-weight"] && !s.IncludeDefault:
		return job.Invalidf("--default-weight needs --include-default")
	case s.IncludeDefault && !(s.DefaultWeight > 0 && s.DefaultWeight < 1):
		return job.Invalidf("--default-weight %v is outside (0, 1)", s.DefaultWeight)
	}
	return nil
}

// checkRanges refuses counts and sizes out of range, n being the nominal
// size of the training set the tunings run on.
func (s CompareRequest) checkRanges(n int) error {
	switch {
	case s.Seeds < 1 || s.Seeds > 1000:
		return job.Invalidf("--seeds %d is outside [1, 1000]", s.Seeds)
	case s.LRStride < 1 || s.ClipStride < 1:
		return job.Invalidf("--lr-stride and --clip-stride must be at least 1")
	case !(s.Momentum >= 0 && s.Momentum < 1):
		return job.Invalidf("--momentum %v is outside [0, 1)", s.Momentum)
	case s.Epochs < 1:
		return job.Invalidf("--epochs and --part-epochs must be at least 1")
	case s.ValSize < 1 || s.ValSize >= n:
		return job.Invalidf("--val-size %d must be at least 1 and below the nominal training-set size %d (the runs train on the rest)", s.ValSize, n)
	case s.BatchSize < 1 || s.BatchSize > n-s.ValSize:
		return job.Invalidf("--batch-size %d is outside [1, %d], the nominal size %d less --val-size %d", s.BatchSize, n-s.ValSize, n, s.ValSize)
	case !(s.MeanRuns > 1) || math.IsInf(s.MeanRuns, 1):
		return job.Invalidf("--mean-runs %v must be finite and above 1", s.MeanRuns)
	case s.VoteSubset < 0:
		return job.Invalidf("--vote-subset %d is negative", s.VoteSubset)
	case CheckVoteReps("--vote-reps", s.VoteReps) != nil:
		return job.Invalidf("--vote-reps %d is outside [1, %d]", s.VoteReps, MaxVoteReps)
	case len(s.Budgets) == 0:
		return job.Invalidf("--epsilon needs at least one budget")
	}
	return nil
}

// optionValues returns the tuners' own settings, each checked, a missing
// one at its default.
func (s CompareRequest) optionValues() (map[string]any, error) {
	v := map[string]any{}
	for _, o := range CompareOptions() {
		v[o.Name] = o.Default
		if x, ok := s.Options[o.Name]; ok {
			v[o.Name] = x
		}
		if o.Check != nil {
			if err := o.Check(v[o.Name]); err != nil {
				return nil, job.Invalid(err)
			}
		}
	}
	return v, nil
}

// checkBudgets refuses a budget or δ that no tuning can take.
func (s CompareRequest) checkBudgets() error {
	for _, e := range s.Budgets {
		if err := accounting.CheckEpsilon(e); err != nil {
			return job.Invalidf("--epsilon %v: %v", e, err)
		}
	}
	if err := accounting.CheckDelta(s.Delta); err != nil {
		return job.Invalidf("--delta: %v", err)
	}
	return nil
}

// entries are the entries of s.Tuners.
func (s CompareRequest) entries() ([]CompareEntry, error) {
	var entries []CompareEntry
	for _, t := range s.Tuners {
		i := slices.IndexFunc(CompareEntries, func(e CompareEntry) bool { return e.ID() == t })
		if i < 0 {
			ids := CompareEntryIDs()
			return nil, job.Invalidf("unknown --tuners entry %q (want %s or %s)", t, strings.Join(ids[:len(ids)-1], ", "), ids[len(ids)-1])
		}
		entries = append(entries, CompareEntries[i])
	}
	return entries, nil
}

// CompareEntryIDs are the IDs of CompareEntries, in order.
func CompareEntryIDs() []string {
	var ids []string
	for _, e := range CompareEntries {
		ids = append(ids, e.ID())
	}
	return ids
}
