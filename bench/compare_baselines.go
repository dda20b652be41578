package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"path/filepath"
	"strconv"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/tuning"
)

// The baselines of a comparison, computed beside the tuners on the same
// seeds, splits and budgets: what a user does instead of tuning, and two
// references that are NOT PRIVATE.
const (
	// BaselineDefault is one private run of published settings at the
	// whole (ε, δ) on the whole training set (no validation split).
	BaselineDefault = "default"
	// BaselineSelection trains every candidate privately at the whole ε
	// and releases the best on the clean validation split with the single
	// run's ε, as most papers report: NOT PRIVATE (the selection is not
	// counted).
	BaselineSelection = "non-private selection"
	// BaselineOracle is the best test accuracy among those runs: NOT
	// PRIVATE.
	BaselineOracle = "oracle"
)

// BaselineEntries are the baselines as entries of a comparison's cells.
var BaselineEntries = []CompareEntry{{Tuner: BaselineDefault}, {Tuner: BaselineSelection}, {Tuner: BaselineOracle}}

// IsBaseline reports whether e is one of BaselineEntries.
func (e CompareEntry) IsBaseline() bool {
	return e.Variant == "" && (e.Tuner == BaselineDefault || e.Tuner == BaselineSelection || e.Tuner == BaselineOracle)
}

// CompareVersus is a private tuner's test accuracy less the default's at
// one budget, paired by seed: the mean difference, its 95% Student-t
// interval half-width and the verdict it supports.
type CompareVersus struct {
	Tuner   string  `json:"tuner"`
	Variant string  `json:"variant,omitempty"`
	Budget  float64 `json:"budget_epsilon"`
	Seeds   int     `json:"seeds"`
	Mean    float64 `json:"mean_difference"`
	CI95    float64 `json:"ci95"`
	// Verdict is VerdictPays (the interval above 0), VerdictCosts (below
	// 0), VerdictUnresolved (it holds 0), or VerdictOneSeed (no interval).
	Verdict string `json:"verdict"`
}

// The verdicts of a tuner against the default.
const (
	VerdictPays       = "tuning pays"
	VerdictCosts      = "tuning costs"
	VerdictUnresolved = "no difference resolved"
	VerdictOneSeed    = "one seed: no interval"
)

// verdict is the verdict of a paired difference (mean ± half over n seeds).
func verdict(mean, half float64, n int) string {
	switch {
	case n < 2:
		return VerdictOneSeed
	case mean-half > 0:
		return VerdictPays
	case mean+half < 0:
		return VerdictCosts
	}
	return VerdictUnresolved
}

// versusDefault is every private entry's paired difference to the
// default at every budget where both ran.
func (r *CompareReport) versusDefault(entries []CompareEntry, budgets []float64) []CompareVersus {
	var out []CompareVersus
	for _, e := range entries {
		if e.IsBaseline() {
			continue
		}
		for _, eps := range budgets {
			mean, half, n := r.paired(e, CompareEntry{Tuner: BaselineDefault}, eps)
			if n == 0 {
				continue
			}
			out = append(out, CompareVersus{Tuner: e.Tuner, Variant: e.Variant, Budget: eps, Seeds: n, Mean: mean, CI95: half, Verdict: verdict(mean, half, n)})
		}
	}
	return out
}

// defaultSettings are the default row's settings: cfg.Default, else the
// network's published settings on the dataset (job.NetworkDefaultsOn).
// It is an error wrapping job.ErrInvalid when there are none, or when they
// do not fit the dataset.
func (cfg CompareConfig) defaultSettings() (job.TrainDefaults, error) {
	d, ok := job.TrainDefaults{}, false
	if cfg.Default != nil {
		d, ok = *cfg.Default, true
	} else {
		d, ok = job.NetworkDefaultsOn(cfg.Data.Arch.Spec, cfg.Data.Name)
	}
	switch {
	case !ok:
		return d, fmt.Errorf("%w: the default baseline needs settings: %s has no published settings on %s; give them (--default-settings)", job.ErrInvalid, cfg.Data.Arch.Spec.Name, cfg.Data.Name)
	case d.BatchSize < 1 || d.BatchSize > cfg.Data.NominalN || d.Epochs < 1 || !(d.LearningRate > 0) || !(d.ClipNorm > 0) || !(d.Momentum >= 0 && d.Momentum < 1):
		return d, fmt.Errorf("%w: default settings %+v do not fit %s (n = %d)", job.ErrInvalid, d, cfg.Data.Name, cfg.Data.NominalN)
	}
	return d, nil
}

// baselineFingerprints identify the settings the default row and the
// candidate runs depend on: the comparison's settings without its
// entries, budgets, seeds and the options only tuners take (the default
// among the candidates, a selection share, a tuning subset), and for the first the
// default's settings and the clipping rule (absent under flat clipping,
// so a flat default fingerprints as before the rule).
func (s CompareSettings) baselineFingerprints(d job.TrainDefaults) (def, candidates string) {
	k := s
	k.Entries, k.Budgets, k.Seeds, k.Default, k.DefaultLabel = nil, nil, nil, nil, ""
	k.IncludeDefault, k.DefaultCandidate, k.DefaultWeight, k.SelectionShare, k.Subsample = false, nil, 0, 0, 0
	b, _ := json.Marshal(k)
	h := sha256.Sum256(b)
	candidates = hex.EncodeToString(h[:])
	db, _ := json.Marshal(struct {
		Dataset string
		Nominal int
		Model   string
		Delta   float64
		Default job.TrainDefaults
		// Clipping and AutoClipGamma: automatic clipping's, absent under flat clipping.
		Clipping      string  `json:",omitempty"`
		AutoClipGamma float64 `json:",omitempty"`
		// Dev: a development split's test set is held-out training
		// examples (absent otherwise, so earlier rows keep their key).
		Dev bool `json:",omitempty"`
	}{s.Dataset, s.NominalSize, s.Model, s.Delta, d, s.Clipping, s.AutoClipGamma, s.TrainSubset != nil && s.TrainSubset.Dev})
	h = sha256.Sum256(db)
	return hex.EncodeToString(h[:]), candidates
}

// cachedCandidates is a cache file of one budget's and seed's candidate
// runs.
type cachedCandidates struct {
	Fingerprint string             `json:"settings_sha256"`
	Runs        []job.CandidateRun `json:"runs"`
	Seconds     float64            `json:"seconds"`
	// CPUSeconds is this process's CPU time over the runs (CompareRow's),
	// absent from files written before it was recorded.
	CPUSeconds *float64 `json:"cpu_seconds,omitempty"`
}

// baselineRows returns the three baseline rows at budget eps and seed,
// from the cache in cfg.Dir/runs where it holds them, and how many came
// from it.
func (rep *CompareReport) baselineRows(ctx context.Context, cfg CompareConfig, d job.TrainDefaults, eps float64, seed uint64, references bool) ([]CompareRow, int, error) {
	fpDef, fpCand := rep.Settings.baselineFingerprints(d)
	name := func(kind string) string {
		return filepath.Join(cfg.Dir, "runs", fmt.Sprintf("%s-eps%s-seed%d.json", kind, strconv.FormatFloat(eps, 'g', -1, 64), seed))
	}
	cached := 0
	def, ok := readCompareRow(name(BaselineDefault), fpDef)
	if ok && !cfg.CostSitting {
		cached++
	} else {
		if cfg.Progress != nil {
			cfg.Progress(fmt.Sprintf("default at ε = %g, seed %d", eps, seed))
		}
		var err error
		if def, err = defaultRow(ctx, cfg, d, eps, seed); err != nil {
			return nil, 0, err
		}
		if err := writeCompareRow(name(BaselineDefault), fpDef, def); err != nil {
			return nil, 0, err
		}
	}
	if !references {
		return []CompareRow{def}, cached, nil
	}
	path := name("candidates")
	var c cachedCandidates
	if b, err := fsx.ReadFile(path, maxReportInput); err == nil && !cfg.CostSitting && json.Unmarshal(b, &c) == nil && c.Fingerprint == fpCand && len(c.Runs) == cfg.Space.Size() {
		cached += 2
	} else {
		if cfg.Progress != nil {
			cfg.Progress(fmt.Sprintf("every candidate at ε = %g, seed %d (not private references)", eps, seed))
		}
		spec := job.TuneSpec{Data: cfg.Data, Space: cfg.Space, Epsilon: eps, Delta: cfg.Delta, Epochs: cfg.Epochs, BatchSize: cfg.BatchSize,
			Momentum: cfg.Momentum, ValSize: cfg.ValSize, Seed: &seed}
		if cfg.Clipping == dpsgd.AutomaticClipping {
			spec.Clipping, spec.AutoClipGamma = cfg.Clipping, cfg.autoClipGamma()
		}
		start := startClock(true) // the runs are this process's
		runs, err := job.EveryCandidate(ctx, spec, cfg.RunProgress)
		if err != nil {
			return nil, 0, err
		}
		c = cachedCandidates{Fingerprint: fpCand, Runs: runs}
		c.Seconds, c.CPUSeconds = start.since()
		b, err := json.MarshalIndent(c, "", "  ")
		if err != nil {
			return nil, 0, err
		}
		if err := fsx.WriteFileAtomic(path, append(b, '\n'), 0o644); err != nil {
			return nil, 0, err
		}
	}
	sel, ora := candidateRows(cfg, c, eps, seed)
	return []CompareRow{def, sel, ora}, cached, nil
}

// defaultRow trains the default settings d once at eps (seeded by seed) on
// the whole training set, with the comparison's clipping rule: under
// automatic clipping no clipping norm, and d's η at C as η·C (as `dptune
// train --clipping automatic` takes it).
func defaultRow(ctx context.Context, cfg CompareConfig, d job.TrainDefaults, eps float64, seed uint64) (CompareRow, error) {
	row := CompareRow{Tuner: BaselineDefault, Budget: eps, Seed: seed, Runs: 1, TrainingEpochs: float64(d.Epochs),
		Selected: map[string]float64{tuning.LearningRate: d.LearningRate, tuning.ClipNorm: d.ClipNorm, tuning.BatchSize: float64(d.BatchSize),
			tuning.Epochs: float64(d.Epochs), tuning.Momentum: d.Momentum}}
	spec := job.TrainSpec{Data: cfg.Data, Epsilon: eps, Delta: cfg.Delta, ClipNorm: d.ClipNorm, BatchSize: d.BatchSize,
		Epochs: d.Epochs, LearningRate: d.LearningRate, Momentum: d.Momentum, Seed: &seed}
	if cfg.Clipping == dpsgd.AutomaticClipping {
		spec.Clipping, spec.AutoClipGamma, spec.ClipNorm, spec.LearningRate = cfg.Clipping, cfg.autoClipGamma(), 0, d.LearningRate*d.ClipNorm
		row.Clipping, row.Selected[tuning.LearningRate] = cfg.Clipping.String(), spec.LearningRate
		delete(row.Selected, tuning.ClipNorm)
	}
	start := startClock(true) // one run in this process
	rel, _, err := job.Train(ctx, spec)
	row.Seconds, row.CPUSeconds = start.since()
	if err != nil {
		return row, err
	}
	r := rel.Report.(*job.TrainReport)
	if r.TestAccuracy != nil {
		row.TestAccuracy, row.Released = *r.TestAccuracy, true
	}
	if rel.Epsilon != nil {
		row.EpsilonRDP = *rel.Epsilon
	}
	row.NoiseMultiplier = r.NoiseMultiplier
	return row, nil
}

// candidateRows are the not-private rows of one budget's and seed's
// candidate runs: the best on the clean validation split (the first of
// equals) and the best test accuracy, each released with one run's ε.
func candidateRows(cfg CompareConfig, c cachedCandidates, eps float64, seed uint64) (sel, ora CompareRow) {
	var epochs float64
	for _, r := range c.Runs {
		e, ok := r.Candidate[tuning.Epochs]
		if !ok {
			e = float64(cfg.Epochs)
		}
		epochs += e
	}
	base := CompareRow{Budget: eps, Seed: seed, EpsilonRDP: eps, Runs: len(c.Runs), TrainingEpochs: epochs, Seconds: c.Seconds, CPUSeconds: c.CPUSeconds}
	sel, ora = base, base
	sel.Tuner, ora.Tuner = BaselineSelection, BaselineOracle
	bestVal, bestTest := -1.0, -1.0
	for _, r := range c.Runs {
		if r.Failed {
			continue
		}
		if r.ValidationAccuracy > bestVal {
			bestVal = r.ValidationAccuracy
			sel.TestAccuracy, sel.Released, sel.Selected, sel.NoiseMultiplier = r.TestAccuracy, true, r.Candidate, r.NoiseMultiplier
		}
		if r.TestAccuracy > bestTest {
			bestTest = r.TestAccuracy
			ora.TestAccuracy, ora.Released, ora.Selected, ora.NoiseMultiplier = r.TestAccuracy, true, r.Candidate, r.NoiseMultiplier
		}
	}
	return sel, ora
}
