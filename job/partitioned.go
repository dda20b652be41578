package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// tunePartitioned is Tune for a partitioned tuner (tuning.Partitioned):
// keyed validation split and k keyed parts of the rest (one added or
// removed example changes one part only), the tuner's part runs
// (tuning.PartitionScorer) as jobs of this runner, its selection and one
// final DP-SGD run at the planned σ. Its report is the tuner's. It runs in
// the steps of a central tuning: start, load, run, release.
func tunePartitioned(ctx context.Context, s TuneSpec, p *tunePlan) (*Release, *NotPrivateDiagnostics, error) {
	t, err := s.startPartitioned(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	if err := t.load(ctx); err != nil {
		return nil, nil, t.resv.done(accounting.Ledger{}, err)
	}
	t.warnEarlier()
	res, runErr := t.plan.Run(ctx, t.fit, t.seed, t.key, t.s.noiseMode())
	return t.release(ctx, res, runErr)
}

// partitionedTuning is a partitioned tuning under way: its plan and the
// plan's scorer of part runs, its charged budget and, once loaded, its
// data and randomness.
type partitionedTuning struct {
	s      TuneSpec
	p      *tunePlan
	tu     tuning.Partitioned
	plan   tuning.PartitionedPlan
	scorer *tuning.PartitionScorer
	resv   *charge
	seed   *uint64
	key    *randsrc.Key
	// fit is the training set less the validation split.
	fit, test *data.Dataset
}

// startPartitioned plans the tuning at the planned σ, refuses private part
// runs of a network with a privacy-spending layer, opens the runner,
// charges the budget file with the plan's worst case before any data is
// read, and announces the tuning and the plan's notes.
func (s TuneSpec) startPartitioned(ctx context.Context, p *tunePlan) (*partitionedTuning, error) {
	tu := p.tuner.(tuning.Partitioned)
	sigma := p.trainer.NoiseMultiplier
	plan := tu.Plan(p.spec, p.trainer.Hyper(), sigma)
	scorer := plan.Scorer()
	scorer.Warn = s.Warn
	if layer := spendingLayer(s.Data.Arch, p.trainer.Networks); scorer.Private && layer != "" {
		// Each private part run would estimate the layer's statistics on
		// its own, which the search's ledger does not count.
		return nil, invalidf("private partition runs do not take a network with a %s layer: score the parts without privacy (their cost is then the search's)", layer)
	}
	var err error
	if s.Runner, err = s.openRunner(ctx); err != nil {
		return nil, err
	}
	s = s.forWorkers() // jobs on workers check their copy of the data
	resv, err := reserveFor(s.Runner, s.Budget, s.Seed != nil, s.Data.Name, "tune", s.Label, plan.Worst())
	if err != nil {
		return nil, err
	}
	if s.Started != nil {
		s.Started(TuneStart{Tuner: s.Tuner, Candidates: p.spec.Candidates(), NoiseMultiplier: sigma})
	}
	for _, n := range plan.Notes() {
		if s.Warn != nil {
			s.Warn(n)
		}
	}
	return &partitionedTuning{s: s, p: p, tu: tu, plan: plan, scorer: scorer, resv: resv}, nil
}

// load reads the data and cuts it — a keyed validation split and k keyed
// parts of the rest — and hands the scorer the parts, the validation set,
// the part runs' randomness, its cache directory and this runner's task;
// the jobs of this process read the data loaded here.
func (t *partitionedTuning) load(ctx context.Context) error {
	s, scorer := t.s, t.scorer
	train, test, err := s.Data.loadCtx(ctx, s.Warn)
	if err != nil {
		return err
	}
	t.test = test
	seed, key, run := s.invocationSeed()
	t.seed, t.key = seed, key
	scorer.Noise = s.noiseMode()
	ref := s.Data.inputRef()
	ref.Validation, ref.ValSize, ref.SplitKey, ref.Parts = "private", s.ValSize, splitKey(seed, key), t.tu.Partitions(t.p.spec)
	fit, val, err := keyedValidationSplit(train, s.ValSize, s.Data.NominalN, ref.SplitKey)
	if err != nil {
		return err
	}
	t.fit = fit
	partKey := newCutKey(seed, key, "partition")
	ref.PartKey = partKey
	parts, err := partition(fit, ref.Parts, partKey)
	if err != nil {
		return err
	}
	if scorer.Cache != "" {
		if err := os.MkdirAll(filepath.Dir(scorer.Cache), 0o700); err != nil {
			return err
		}
	}
	scorer.Parts, scorer.Val = parts, val
	switch {
	case seed != nil:
		scorer.Seed = randsrc.Seeded(*seed, "part runs").Uint64()
	case key != nil:
		scorer.Key = key.Derive("part runs")
	default:
		k := randsrc.NewKey() // fresh, 256 bits
		scorer.Key = &k
	}
	cachePut(cacheKey(ref), loaded{train: fit, val: val, parts: parts})
	scorer.Runner, scorer.Task = run, partitionTask(scorer, ref)
	scorer.SplitID = partKey.id()
	if s.Progress != nil {
		scorer.Progress = s.Progress
	}
	return nil
}

// warnEarlier warns when the scorer's cache already served earlier
// searches: this one composes with them.
func (t *partitionedTuning) warnEarlier() {
	earlier, err := t.scorer.Searches()
	if err != nil || len(earlier) == 0 || t.s.Warn == nil {
		return
	}
	var spent float64
	for _, e := range earlier {
		spent += e.Epsilon
	}
	t.s.Warn(fmt.Sprintf("%s already served %d search(es) spending ε = %.4g in total (pure DP); this search composes with them — each counts in a budget file only if it ran with that budget",
		t.scorer.Cache, len(earlier), spent))
}

// release builds the tuner's report and the release of a tuning that ran
// (res, and runErr, the run's error): the ledger and its ε always; the
// selected hyperparameters, the model and its test accuracy only when it
// finished.
func (t *partitionedTuning) release(ctx context.Context, res tuning.PartitionedResult, runErr error) (*Release, *NotPrivateDiagnostics, error) {
	s := t.s
	interrupted := errors.Is(runErr, context.Canceled)
	facts := tuning.ReportFacts{Tuner: s.Tuner, Dataset: s.Data.Name, NominalSize: s.Data.NominalN, Fixed: s.fixedUsed(), Delta: s.Delta, Accountant: "rdp",
		Seeded: s.Seed != nil, SecureNoise: s.Seed == nil, Interrupted: interrupted, Ledger: res.Ledger}
	rel := &Release{Ledger: res.Ledger, Delta: s.Delta, Accountant: "rdp"}
	g, err := res.Ledger.Spent(t.tu.Accountant(t.p.spec), s.Delta)
	if err != nil && runErr == nil {
		runErr = err
	}
	facts.Epsilon = g.Epsilon
	rel.Epsilon = &facts.Epsilon
	if runErr != nil && !interrupted {
		facts.Failed, rel.Failed = releasedFailure(runErr, s.Data.Name), true
		rel.Report = res.Report(facts)
		return rel, nil, t.resv.done(res.Ledger, runErr)
	}
	if !interrupted && res.Selected != nil {
		t.releaseSelected(ctx, &facts, rel, res)
	}
	rel.Report = res.Report(facts)
	if interrupted {
		return rel, nil, t.resv.done(res.Ledger, fmt.Errorf("interrupted; finished part runs are kept in %s for a rerun: %w", t.scorer.Cache, context.Canceled))
	}
	return rel, nil, t.resv.done(res.Ledger, nil)
}

// releaseSelected puts the selected candidate, the released model and its
// test accuracy (left out when the evaluation fails) into facts and rel,
// with the settings of the released model's own run.
func (t *partitionedTuning) releaseSelected(ctx context.Context, facts *tuning.ReportFacts, rel *Release, res tuning.PartitionedResult) {
	s, trainer := t.s, t.p.trainer
	facts.Selected, facts.SelectedChoices = res.Selected.Values, res.Selected.Labels
	if m, err := dpsgd.Evaluate(ctx, res.Model, t.test.X, t.test.Y); err == nil {
		facts.TestAccuracy = &m.Accuracy
	}
	rel.Model, rel.Selected = res.Model, facts.Selected
	q, steps := trainer.SamplingRate, trainer.Steps
	if _, cfg, err := trainer.Hyper().Run(*res.Selected); err == nil {
		q, steps = cfg.SamplingRate, cfg.Steps // the released model's own run
	}
	rel.hyper = map[string]any{"selected": facts.Selected, "selected_choices": facts.SelectedChoices, "noise_multiplier": trainer.NoiseMultiplier, "sampling_rate": q, "steps": steps, "tuner": s.Tuner}
	if c, g := s.clippingFacts(); c != "" {
		rel.hyper["clipping"], rel.hyper["auto_clip_gamma"] = c, g
	}
}

// fixedUsed is the learning rate and clipping norm every run took because
// s.Space has no such dimension (s.fixed(): the built-in network's own, or
// DefaultLearningRate and 1), by dimension name; nil when the space has
// both. Under automatic clipping there is no clipping norm to state.
func (s TuneSpec) fixedUsed() map[string]float64 {
	lr, clip := s.fixed()
	out := map[string]float64{tuning.LearningRate: lr, tuning.ClipNorm: clip}
	if s.Clipping == dpsgd.AutomaticClipping {
		delete(out, tuning.ClipNorm)
	}
	for _, d := range s.Space.Dims {
		delete(out, d.Name)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
