package job

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// DoublingSpec holds the doubling tuner's settings (Ding et al.,
// Algorithm 1, made unconditional by an iteration cap).
type DoublingSpec struct {
	Partitions    int     // k disjoint parts of the training data
	Epsilon0      float64 // ϵ of one search iteration, nats
	Granularity   float64 // utility granularity g
	U0            float64 // utility lower bound u₀
	MaxIterations int     // the cap T_max; 0: tuning.DefaultMaxIterations
	PartEpochs    int     // epochs of each part run
	// Private trains the parts with DP-SGD at PartitionNoise (counted);
	// otherwise they are clipped without noise, covered by the search's
	// Laplace noise (Lemma 2).
	Private        bool
	PartitionNoise float64
	// Cache is the curator-only file of finished part scores (NOT PRIVATE,
	// mode 0600), reused by a rerun with the same seed and settings; "" for
	// none.
	Cache string
}

// DoublingReport is report.json of the doubling tuner.
type DoublingReport struct {
	Tuner               string             `json:"tuner"`
	Dataset             string             `json:"dataset"`
	NominalSize         int                `json:"nominal_size"`
	Space               string             `json:"space"`
	Candidates          int                `json:"candidates"`
	Selected            map[string]float64 `json:"selected"`
	Fallback            bool               `json:"fallback_first_candidate"`
	TestAccuracy        *float64           `json:"test_accuracy"`
	Epsilon             float64            `json:"epsilon"` // the ledger's: what was spent
	Delta               float64            `json:"delta"`
	Accountant          string             `json:"accountant"`
	FinalEpsilon        float64            `json:"final_run_epsilon"`       // of the final run's completed steps
	TuningOverhead      float64            `json:"tuning_overhead_epsilon"` // T_max·ϵ
	BaseNoiseMultiplier float64            `json:"base_noise_multiplier"`   // the final run's σ
	Partitions          int                `json:"partitions"`
	Epsilon0            float64            `json:"epsilon0"`
	Granularity         float64            `json:"granularity"`
	U0                  float64            `json:"u0"`
	MaxIterations       int                `json:"max_iterations"`
	// Realised iterations and the paper's with-high-probability figure,
	// for comparison only: the guarantee is the ledger's, at the cap.
	RealisedIterations int               `json:"realised_iterations_not_the_guarantee"`
	PaperWHPEpsilon    float64           `json:"paper_whp_epsilon_not_the_guarantee"`
	EarlierSearches    int               `json:"earlier_searches_on_this_cache"`
	PrivatePartitions  bool              `json:"private_partitions"`
	Epochs             int               `json:"final_epochs"`
	FinalSteps         int               `json:"final_steps_done"`
	PartEpochs         int               `json:"part_epochs"`
	Seeded             bool              `json:"seeded"` // the seed itself is never written
	SecureNoise        bool              `json:"secure_noise"`
	Interrupted        bool              `json:"interrupted"`
	Failed             string            `json:"failed,omitempty"`
	Ledger             accounting.Ledger `json:"ledger"`
}

// doublingPlan is a checked doubling spec: the tuner without its data, and
// the final run's calibrated noise.
type doublingPlan struct {
	tuner        *tuning.DoublingTuner
	sigma, q     float64
	steps, fitN  int
	search       tuning.DoublingConfig
	searchLedger accounting.Ledger
}

// planDoubling checks s and calibrates the final run so that the search's
// cap (and private part runs) plus the final run meet the total budget.
func (s TuneSpec) planDoubling(ctx context.Context) (*doublingPlan, error) {
	if err := s.checkCommon(); err != nil {
		return nil, err
	}
	d := s.Doubling
	if d.MaxIterations == 0 {
		d.MaxIterations = tuning.DefaultMaxIterations(d.U0, d.Granularity)
	}
	search := tuning.DoublingConfig{Partitions: d.Partitions, Epsilon0: d.Epsilon0, Granularity: d.Granularity, U0: d.U0, MaxIterations: d.MaxIterations}
	if err := search.Check(); err != nil {
		return nil, invalid(err)
	}
	nominal := s.Data.NominalN
	fitN := nominal - s.ValSize
	switch {
	case s.Accountant != "" && s.Accountant != "rdp":
		return nil, invalidf("the doubling tuner is counted by the rdp accountant only, not %s", s.Accountant)
	case s.Validation != "" && s.Validation != "private" || s.PublicVal != nil:
		return nil, invalidf("the doubling tuner scores on a private validation split only")
	case s.ValSize < 100 || s.ValSize >= nominal/2:
		return nil, invalidf("validation size %d is outside [100, %d)", s.ValSize, nominal/2)
	case s.ValSize < d.Partitions:
		return nil, invalidf("validation size %d is smaller than the %d partitions: a score's sensitivity 1/n_val would exceed 1/k", s.ValSize, d.Partitions)
	case d.Partitions > fitN/s.BatchSize:
		return nil, invalidf("%d partitions leave fewer than the batch size %d examples per part", d.Partitions, s.BatchSize)
	case d.Private && (!(d.PartitionNoise > 0) || math.IsInf(d.PartitionNoise, 1)):
		return nil, invalidf("partition noise multiplier %v must be positive and finite", d.PartitionNoise)
	}
	q := float64(s.BatchSize) / float64(fitN)
	partQ := float64(s.BatchSize) / float64(fitN/d.Partitions)
	if err := dpsgd.CheckEpochs(s.Epochs, q); err != nil {
		return nil, invalidf("epochs %d: %v", s.Epochs, err)
	}
	if err := dpsgd.CheckEpochs(d.PartEpochs, partQ); err != nil {
		return nil, invalidf("part epochs %d: %v", d.PartEpochs, err)
	}
	scorer := &tuning.PartitionScorer{Arch: s.Data.Arch, ValSize: s.ValSize, Epochs: d.PartEpochs, BatchSize: s.BatchSize, SamplingRate: partQ,
		Momentum: s.Momentum, Private: d.Private, NoiseMultiplier: d.PartitionNoise, Cache: d.Cache, Warn: s.Warn}
	steps := dpsgd.StepsForEpochs(s.Epochs, q)
	tuner := &tuning.DoublingTuner{Space: s.Space, Search: search, Arch: s.Data.Arch, Seed: s.Seed, Scorer: scorer,
		Final: dpsgd.Config{SamplingRate: q, ExpectedBatchSize: float64(s.BatchSize), Steps: steps, Momentum: s.Momentum}}
	searchLedger := tuner.SearchLedger()
	total := func(sigma float64) accounting.Event {
		return accounting.Composed{Events: []accounting.Event{searchLedger.Event(), accounting.DPSGD(sigma, q, steps)}}
	}
	sigma, err := accounting.CalibrateNoise(ctx, accounting.RDP{}, total, s.Epsilon, s.Delta)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		over, _ := searchLedger.Spent(accounting.RDP{}, s.Delta)
		return nil, invalidWrapf(err, "ε = %g is too small: the search alone (at most %d iterations of ϵ = %g) spends ε = %.4f at δ = %g, leaving nothing for the final run: %v",
			s.Epsilon, d.MaxIterations, d.Epsilon0, over.Epsilon, s.Delta, err)
	}
	tuner.Final.NoiseMultiplier = sigma
	return &doublingPlan{tuner: tuner, sigma: sigma, q: q, steps: steps, fitN: fitN, search: search, searchLedger: searchLedger}, nil
}

// tuneDoubling is Tune for the doubling tuner: keyed validation split and
// k keyed parts of the rest (one added or removed example changes one part
// only, as Lemma 2 needs), every candidate trained on every part
// (tuning.PartitionScorer), the capped doubling search, one final DP-SGD run
// of the selected candidate.
func tuneDoubling(ctx context.Context, s TuneSpec) (*Release, *NotPrivateDiagnostics, error) {
	p, err := s.planDoubling(ctx)
	if err != nil {
		return nil, nil, err
	}
	d, tuner, scorer := s.Doubling, p.tuner, p.tuner.Scorer
	worst := p.searchLedger
	worst.Add("final DP-SGD run with the selected candidate", accounting.DPSGD(p.sigma, p.q, p.steps))
	if s.Runner, err = s.openRunner(ctx); err != nil {
		return nil, nil, err
	}
	resv, err := reserveFor(s.Runner, s.Budget, s.Seed != nil, s.Data.Name, "tune", s.Label, worst)
	if err != nil {
		return nil, nil, err
	}
	if s.Started != nil {
		s.Started(TuneStart{Tuner: Doubling, Candidates: s.Space.Size(), NoiseMultiplier: p.sigma})
	}
	if k := float64(d.Partitions) * d.Epsilon0; k < 5 && s.Warn != nil {
		s.Warn(fmt.Sprintf("k·ϵ = %g is below 5; Ding et al. advise k ≥ 5/ϵ (here %d partitions), else the search picks poor candidates", k, int(math.Ceil(5/d.Epsilon0))))
	}
	train, test, err := s.Data.load(s.Warn)
	if err != nil {
		return nil, nil, resv.done(accounting.Ledger{}, err)
	}
	seed, key, run := s.invocationSeed()
	tuner.Seed, tuner.Key, tuner.Final.Noise, scorer.Noise = seed, key, s.noiseMode(), s.noiseMode()
	ref := s.Data.ref()
	ref.Validation, ref.ValSize, ref.SplitKey, ref.Parts = "private", s.ValSize, splitKey(seed, key), d.Partitions
	fit, val, err := keyedValidationSplit(train, s.ValSize, s.Data.NominalN, ref.SplitKey)
	if err != nil {
		return nil, nil, resv.done(accounting.Ledger{}, err)
	}
	partKey := newCutKey(seed, key, "partition")
	ref.PartKey = partKey
	parts, err := partition(fit, d.Partitions, partKey)
	if err != nil {
		return nil, nil, resv.done(accounting.Ledger{}, err)
	}
	if scorer.Cache != "" {
		if err := os.MkdirAll(filepath.Dir(scorer.Cache), 0o700); err != nil {
			return nil, nil, resv.done(accounting.Ledger{}, err)
		}
	}
	scorer.Parts, scorer.Val, tuner.Train = parts, val, fit
	switch {
	case seed != nil:
		scorer.Seed = randsrc.Seeded(*seed, "part runs").Uint64()
	case key != nil:
		scorer.Key = key.Derive("part runs")
	default:
		k := randsrc.NewKey() // fresh, 256 bits
		scorer.Key = &k
	}
	// The jobs of this process read the data loaded here.
	cachePut(cacheKey(ref), loaded{train: fit, val: val, parts: parts})
	scorer.Runner, scorer.Task = run, partitionTask(scorer, ref)
	scorer.SplitID = partKey.id()
	if s.Progress != nil {
		scorer.Progress = s.Progress
	}
	if earlier, err := scorer.Searches(); err == nil && len(earlier) > 0 && s.Warn != nil {
		var spent float64
		for _, e := range earlier {
			spent += e.Epsilon
		}
		s.Warn(fmt.Sprintf("%s already served %d search(es) spending ε = %.4g in total (pure DP); this search composes with them — each counts in a budget file only if it ran with that budget",
			scorer.Cache, len(earlier), spent))
	}
	res, runErr := tuner.Run(ctx)
	interrupted := errors.Is(runErr, context.Canceled)
	rep := &DoublingReport{Tuner: Doubling, Dataset: s.Data.Name, NominalSize: s.Data.NominalN, Space: s.Space.Name, Candidates: s.Space.Size(),
		Fallback: res.Fallback, Delta: s.Delta, Accountant: "rdp", BaseNoiseMultiplier: p.sigma, Partitions: d.Partitions, Epsilon0: d.Epsilon0,
		Granularity: d.Granularity, U0: d.U0, MaxIterations: p.search.MaxIterations, RealisedIterations: res.Iterations,
		EarlierSearches: len(res.EarlierSearches), PrivatePartitions: d.Private, Epochs: s.Epochs, FinalSteps: res.FinalSteps,
		PartEpochs: d.PartEpochs, Seeded: s.Seed != nil, SecureNoise: s.Seed == nil, Interrupted: interrupted, Ledger: res.Ledger}
	rel := &Release{Report: rep, Ledger: res.Ledger, Delta: s.Delta, Accountant: "rdp"}
	g, err := res.Ledger.Spent(accounting.RDP{}, s.Delta)
	if err != nil && runErr == nil {
		runErr = err
	}
	rep.Epsilon = g.Epsilon
	rel.Epsilon = &rep.Epsilon
	if fe, err := (accounting.RDP{}).Epsilon(accounting.DPSGD(p.sigma, p.q, res.FinalSteps), s.Delta); err == nil {
		rep.FinalEpsilon = fe.Epsilon
	}
	rep.TuningOverhead = float64(p.search.MaxIterations) * p.search.IterationEpsilon()
	rep.PaperWHPEpsilon = rep.FinalEpsilon + 3*math.Log2(math.Max((1-d.U0)/d.Granularity, 2))*d.Epsilon0
	if runErr != nil && !interrupted {
		rep.Failed, rel.Failed = runErr.Error(), true
		return rel, nil, resv.done(res.Ledger, runErr)
	}
	if !interrupted && res.Selected != nil {
		rep.Selected = res.Selected.Values
		if m, err := dpsgd.Evaluate(ctx, res.Model, test.X, test.Y); err == nil {
			rep.TestAccuracy = &m.Accuracy
		}
		rel.Model, rel.Selected = res.Model, rep.Selected
		rel.hyper = map[string]any{"selected": rep.Selected, "noise_multiplier": p.sigma, "sampling_rate": p.q, "steps": p.steps, "tuner": Doubling}
	}
	if interrupted {
		return rel, nil, resv.done(res.Ledger, fmt.Errorf("interrupted; finished part runs are kept in %s for a rerun: %w", scorer.Cache, context.Canceled))
	}
	return rel, nil, resv.done(res.Ledger, nil)
}
