package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// tunePartitioned is Tune for a partitioned tuner (tuning.Partitioned):
// keyed validation split and k keyed parts of the rest (one added or
// removed example changes one part only), the tuner's part runs
// (tuning.PartitionScorer) as jobs of this runner, its selection and one
// final DP-SGD run at the planned σ. Its report is the tuner's.
func tunePartitioned(ctx context.Context, s TuneSpec, p *tunePlan) (*Release, *NotPrivateDiagnostics, error) {
	tu := p.tuner.(tuning.Partitioned)
	k := tu.Partitions(p.spec)
	sigma, q, steps := p.trainer.NoiseMultiplier, p.trainer.SamplingRate, p.trainer.Steps
	plan := tu.Plan(p.spec, p.trainer.Hyper(), sigma)
	scorer := plan.Scorer()
	scorer.Warn = s.Warn
	if layer := spendingLayer(s.Data.Arch, p.trainer.Networks); scorer.Private && layer != "" {
		// Each private part run would estimate the layer's statistics on
		// its own, which the search's ledger does not count.
		return nil, nil, invalidf("private partition runs do not take a network with a %s layer: score the parts without privacy (their cost is then the search's)", layer)
	}
	var err error
	if s.Runner, err = s.openRunner(ctx); err != nil {
		return nil, nil, err
	}
	resv, err := reserveFor(s.Runner, s.Budget, s.Seed != nil, s.Data.Name, "tune", s.Label, plan.Worst())
	if err != nil {
		return nil, nil, err
	}
	if s.Started != nil {
		s.Started(TuneStart{Tuner: s.Tuner, Candidates: p.spec.Candidates(), NoiseMultiplier: sigma})
	}
	for _, n := range plan.Notes() {
		if s.Warn != nil {
			s.Warn(n)
		}
	}
	train, test, err := s.Data.loadCtx(ctx, s.Warn)
	if err != nil {
		return nil, nil, resv.done(accounting.Ledger{}, err)
	}
	seed, key, run := s.invocationSeed()
	scorer.Noise = s.noiseMode()
	ref := s.Data.inputRef()
	ref.Validation, ref.ValSize, ref.SplitKey, ref.Parts = "private", s.ValSize, splitKey(seed, key), k
	fit, val, err := keyedValidationSplit(train, s.ValSize, s.Data.NominalN, ref.SplitKey)
	if err != nil {
		return nil, nil, resv.done(accounting.Ledger{}, err)
	}
	partKey := newCutKey(seed, key, "partition")
	ref.PartKey = partKey
	parts, err := partition(fit, k, partKey)
	if err != nil {
		return nil, nil, resv.done(accounting.Ledger{}, err)
	}
	if scorer.Cache != "" {
		if err := os.MkdirAll(filepath.Dir(scorer.Cache), 0o700); err != nil {
			return nil, nil, resv.done(accounting.Ledger{}, err)
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
	res, runErr := plan.Run(ctx, fit, seed, key, s.noiseMode())
	interrupted := errors.Is(runErr, context.Canceled)
	facts := tuning.ReportFacts{Tuner: s.Tuner, Dataset: s.Data.Name, NominalSize: s.Data.NominalN, Fixed: s.fixedUsed(), Delta: s.Delta, Accountant: "rdp",
		Seeded: s.Seed != nil, SecureNoise: s.Seed == nil, Interrupted: interrupted, Ledger: res.Ledger}
	rel := &Release{Ledger: res.Ledger, Delta: s.Delta, Accountant: "rdp"}
	g, err := res.Ledger.Spent(tu.Accountant(p.spec), s.Delta)
	if err != nil && runErr == nil {
		runErr = err
	}
	facts.Epsilon = g.Epsilon
	rel.Epsilon = &facts.Epsilon
	if runErr != nil && !interrupted {
		facts.Failed, rel.Failed = runErr.Error(), true
		rel.Report = res.Report(facts)
		return rel, nil, resv.done(res.Ledger, runErr)
	}
	if !interrupted && res.Selected != nil {
		facts.Selected, facts.SelectedChoices = res.Selected.Values, res.Selected.Labels
		if m, err := dpsgd.Evaluate(ctx, res.Model, test.X, test.Y); err == nil {
			facts.TestAccuracy = &m.Accuracy
		}
		rel.Model, rel.Selected = res.Model, facts.Selected
		if _, cfg, err := p.trainer.Hyper().Run(*res.Selected); err == nil {
			q, steps = cfg.SamplingRate, cfg.Steps // the released model's own run
		}
		rel.hyper = map[string]any{"selected": facts.Selected, "selected_choices": facts.SelectedChoices, "noise_multiplier": sigma, "sampling_rate": q, "steps": steps, "tuner": s.Tuner}
		if c, g := s.clippingFacts(); c != "" {
			rel.hyper["clipping"], rel.hyper["auto_clip_gamma"] = c, g
		}
	}
	rel.Report = res.Report(facts)
	if interrupted {
		return rel, nil, resv.done(res.Ledger, fmt.Errorf("interrupted; finished part runs are kept in %s for a rerun: %w", scorer.Cache, context.Canceled))
	}
	return rel, nil, resv.done(res.Ledger, nil)
}

// fixedUsed is the learning rate and clipping norm every run took because
// s.Space has no such dimension (s.fixed(): the built-in network's own, or
// DefaultLearningRate and 1), by dimension name; nil when the space has
// both. Under automatic clipping there is no clipping norm to state.
func (s TuneSpec) fixedUsed() map[string]float64 {
	lr, clip := s.fixed()
	out := map[string]float64{tuning.LearningRate: lr, tuning.ClipNorm: clip}
	if s.Clipping == AutomaticClipping {
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
