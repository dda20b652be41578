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

// tunePartitioned is Tune for a partitioned tuner, Ding et al.'s doubling
// tuner (tuning.DoublingTuner): keyed validation split and k keyed parts of
// the rest (one added or removed example changes one part only, as Lemma 2
// needs), every candidate trained on every part (tuning.PartitionScorer),
// the capped doubling search, one final DP-SGD run of the selected
// candidate at the planned σ.
func tunePartitioned(ctx context.Context, s TuneSpec, p *tunePlan) (*Release, *NotPrivateDiagnostics, error) {
	d := tuning.DoublingOptionsOf(p.spec)
	tuner := tuning.NewDoubling(p.spec, s.Data.Arch)
	scorer := tuner.Scorer
	scorer.Warn = s.Warn
	sigma, q, steps := p.trainer.NoiseMultiplier, p.trainer.SamplingRate, p.trainer.Steps
	tuner.Final.NoiseMultiplier = sigma
	worst := tuner.SearchLedger()
	worst.Add("final DP-SGD run with the selected candidate", accounting.DPSGD(sigma, q, steps))
	var err error
	if s.Runner, err = s.openRunner(ctx); err != nil {
		return nil, nil, err
	}
	resv, err := reserveFor(s.Runner, s.Budget, s.Seed != nil, s.Data.Name, "tune", s.Label, worst)
	if err != nil {
		return nil, nil, err
	}
	if s.Started != nil {
		s.Started(TuneStart{Tuner: s.Tuner, Candidates: s.Space.Size(), NoiseMultiplier: sigma})
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
	rep := &DoublingReport{Tuner: s.Tuner, Dataset: s.Data.Name, NominalSize: s.Data.NominalN, Space: s.Space.Name, Candidates: s.Space.Size(),
		Fallback: res.Fallback, Delta: s.Delta, Accountant: "rdp", BaseNoiseMultiplier: sigma, Partitions: d.Partitions, Epsilon0: d.Epsilon0,
		Granularity: d.Granularity, U0: d.U0, MaxIterations: tuner.Search.MaxIterations, RealisedIterations: res.Iterations,
		EarlierSearches: len(res.EarlierSearches), PrivatePartitions: d.Private, Epochs: s.Epochs, FinalSteps: res.FinalSteps,
		PartEpochs: d.PartEpochs, Seeded: s.Seed != nil, SecureNoise: s.Seed == nil, Interrupted: interrupted, Ledger: res.Ledger}
	rel := &Release{Report: rep, Ledger: res.Ledger, Delta: s.Delta, Accountant: "rdp"}
	g, err := res.Ledger.Spent(accounting.RDP{}, s.Delta)
	if err != nil && runErr == nil {
		runErr = err
	}
	rep.Epsilon = g.Epsilon
	rel.Epsilon = &rep.Epsilon
	if fe, err := (accounting.RDP{}).Epsilon(accounting.DPSGD(sigma, q, res.FinalSteps), s.Delta); err == nil {
		rep.FinalEpsilon = fe.Epsilon
	}
	rep.TuningOverhead = float64(tuner.Search.MaxIterations) * tuner.Search.IterationEpsilon()
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
		rel.hyper = map[string]any{"selected": rep.Selected, "noise_multiplier": sigma, "sampling_rate": q, "steps": steps, "tuner": s.Tuner}
	}
	if interrupted {
		return rel, nil, resv.done(res.Ledger, fmt.Errorf("interrupted; finished part runs are kept in %s for a rerun: %w", scorer.Cache, context.Canceled))
	}
	return rel, nil, resv.done(res.Ledger, nil)
}
