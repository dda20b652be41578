package job

import (
	"context"
	"errors"
	"fmt"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// tuneRelease runs a checked central tuning (s.plan) in its steps: charge
// the budget for the whole plan before the data is read (start), load and
// cut the data (load), run the selection and the final run (run), and
// release what the tuner's guarantee covers (release).
//
// A tuning with a Checkpoint on this process's runner keeps what a resume
// needs from the start to the end (openCheckpoint, close; see
// ResumeTuneSpec).
func tuneRelease(ctx context.Context, s TuneSpec) (*Release, *NotPrivateDiagnostics, error) {
	p, err := s.plan(ctx)
	if err != nil {
		return nil, nil, err
	}
	ck, s, err := s.openCheckpoint(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	rel, diag, err := s.tuneRun(ctx, p)
	return rel, diag, ck.close(rel, err)
}

// tuneRun runs the planned tuning p of s: a central tuning in its steps,
// or a partitioned tuner's (tunePartitioned).
func (s TuneSpec) tuneRun(ctx context.Context, p *tunePlan) (*Release, *NotPrivateDiagnostics, error) {
	tu, ok := p.tuner.(tuning.Runner)
	if !ok {
		return tunePartitioned(ctx, s, p)
	}
	t, err := s.start(ctx, p, tu)
	if err != nil {
		return nil, nil, err
	}
	if err := t.load(ctx); err != nil {
		return nil, nil, t.resv.done(accounting.Ledger{}, err)
	}
	res, fin, err := t.run(ctx)
	return t.release(ctx, res, fin, err)
}

// centralTuning is a central tuning under way: its plan, its charged
// budget and, once loaded, its data.
type centralTuning struct {
	s  TuneSpec
	p  *tunePlan
	tu tuning.Runner
	// normLedger is the tuning's one data normalisation, if any: the
	// ledger opens with it.
	normLedger accounting.Ledger
	finalSigma float64
	resv       *charge
	seed       *uint64
	key        *randsrc.Key
	runner     runner.Runner
	// train and test are the whole sets as the network reads them; ref
	// names the selection's data for the runs' jobs.
	train, test *data.Dataset
	ref         dataRef
}

// finalOutcome is what became of a tuning's final run.
type finalOutcome struct {
	// norm is the final run's own data normalisation event (nil: none).
	norm accounting.Event
	// nothing says the selection chose nothing and the final run trained
	// the default.
	nothing bool
}

// start opens the runner, charges the budget file with the whole plan's
// worst case (selection and final run) before any data is read, and
// announces the tuning.
func (s TuneSpec) start(ctx context.Context, p *tunePlan, tu tuning.Runner) (*centralTuning, error) {
	t := &centralTuning{s: s, p: p, tu: tu}
	var err error
	if t.s.Runner, err = s.openRunner(ctx); err != nil {
		return nil, err
	}
	t.s = t.s.forWorkers() // jobs on workers check their copy of the data
	trainer, spec := p.trainer, p.spec
	if trainer.Norm != nil {
		t.normLedger.Add(tuning.SharedDataNormLabel, trainer.Norm.Event())
	}
	worst := withNorm(t.normLedger, s.selectionLedger(ledgerOf(tu.Label(spec), tu.Event(trainer.Event(), spec))))
	if p.final != nil {
		// The budget is charged once for the selection and the final run.
		t.finalSigma = p.final.Config.NoiseMultiplier
		worst.Add(finalLabel, finalEvent(*p.final, s.Space, t.finalSigma))
	}
	if t.resv, err = reserveFor(t.s.Runner, s.Budget, s.Seed != nil, s.Data.Name, "tune", s.Label, worst); err != nil {
		return nil, err
	}
	if s.Started != nil {
		s.Started(TuneStart{Tuner: s.Tuner, Candidates: spec.Candidates(), NoiseMultiplier: trainer.NoiseMultiplier, FinalNoiseMultiplier: t.finalSigma,
			SelectionShare: s.SelectionShare, Subsample: s.Subsample})
	}
	return t, nil
}

// load reads the data and cuts the selection's: the tuning subset, if any
// (drawn once, on the images as read), and the private validation split
// inside it, or the public validation set.
func (t *centralTuning) load(ctx context.Context) error {
	s, trainer := t.s, t.p.trainer
	raw, train, test, err := s.Data.loadRawCtx(ctx, s.Warn)
	if err != nil {
		return err
	}
	t.train, t.test = train, test
	t.seed, t.key, t.runner = s.invocationSeed()
	trainer.Noise = s.noiseMode()
	ref := s.Data.inputRef()
	ref.Validation = t.p.spec.Validation
	if s.Subsample != 0 {
		ref.Subsample, ref.SubsampleKey = s.Subsample, subsampleKey(t.seed, t.key)
	}
	if ref.Validation == "public" {
		if trainer.Data, err = ref.subset(raw, train); err != nil {
			return err
		}
		val, _, err := s.PublicVal.Load()
		if err == nil {
			// Read through the network's front end, as the training set is.
			val, err = s.Data.inputs(ctx, "validation", val, s.Warn)
		}
		if err != nil {
			return fmt.Errorf("the public validation set: %w", err)
		}
		trainer.Val = val
		pub := s.PublicVal.ref()
		pub.FrontEnd = ref.FrontEnd
		ref.Public = &pub
	} else {
		ref.ValSize, ref.SplitKey = s.ValSize, splitKey(t.seed, t.key)
		if trainer.Data, trainer.Val, err = ref.cut(raw, train); err != nil {
			return err
		}
	}
	t.ref = ref
	return nil
}

// run estimates the tuning's one data normalisation (if any), runs the
// selection, and trains the final run of what it selected — the default
// when it selected nothing (a fixed function of its empty output) — or,
// interrupted before it, counts the planned final run whole.
func (t *centralTuning) run(ctx context.Context) (tuning.Result, finalOutcome, error) {
	s, p, trainer, spec := t.s, t.p, t.p.trainer, t.p.spec
	var res tuning.Result
	var fin finalOutcome
	var err error
	if trainer.Norm != nil {
		// Estimated once on the whole training set (validation split
		// included, as the final run's), before any run; if it fails or
		// is cancelled, no run starts and the ledger still counts it.
		trainer.Norm.Estimate, err = s.estimateNorm(ctx, trainer, t.train, t.seed, t.key)
	}
	// The jobs of this process read the data loaded here.
	cachePut(cacheKey(t.ref), loaded{train: trainer.Data, val: trainer.Val})
	spec.Seed, spec.Key, spec.Jobs = t.seed, t.key, dpsgdJobs{t: trainer, data: t.ref, model: true}
	if err == nil {
		res, err = t.tu.Run(ctx, spec, trainer, t.runner)
	}
	res.Ledger = withNorm(t.normLedger, s.selectionLedger(res.Ledger))
	if p.final == nil {
		return res, fin, err
	}
	if err == nil && (res.Selected == nil || res.Model == nil) && spec.Default != nil {
		d := *spec.Default
		res.Selected, res.Score, fin.nothing = &d, 0, true
	}
	switch {
	case err == nil && res.Selected != nil && (res.Model != nil || fin.nothing):
		// Only the selected hyperparameters leave the selection: the
		// released model is one final run of them on the whole training
		// set.
		res.Model, fin.norm, err = trainFinal(ctx, *p.final, s.Space, *res.Selected, t.train, t.seed, t.key, trainer.Noise, &res.Ledger)
	case errors.Is(err, context.Canceled):
		// Interrupted before the final run: the budget file charges it
		// all the same (the planned worst case), and so does the ledger.
		res.Ledger.Add(finalLabel+" (planned: the tuning was interrupted before it, and counts it whole)", finalEvent(*p.final, s.Space, t.finalSigma))
	}
	return res, fin, err
}

// release builds the report and the release of a tuning that ran (res,
// fin, and tuneErr, the run's error): the ledger always; the selected
// hyperparameters, the model and its scores only when it finished.
func (t *centralTuning) release(ctx context.Context, res tuning.Result, fin finalOutcome, tuneErr error) (*Release, *NotPrivateDiagnostics, error) {
	s, p, trainer, spec := t.s, t.p, t.p.trainer, t.p.spec
	interrupted := errors.Is(tuneErr, context.Canceled)
	accName, acc := "rdp", t.tu.Accountant(spec)
	if spec.Accountant != "" {
		accName = spec.Accountant
	}
	rep := &TuneReport{Tuner: s.Tuner, Dataset: s.Data.Name, NominalSize: s.Data.NominalN, Space: s.Space.Name, Validation: s.Validation,
		ValidationSize: trainer.ValSize, Delta: s.Delta, Accountant: "rdp", BaseNoiseMultiplier: trainer.NoiseMultiplier,
		Repetitions: spec.Repetitions, MeanRuns: spec.Repetitions.Mean(), Epochs: s.Epochs, BatchSize: s.BatchSize, SamplingRate: trainer.SamplingRate,
		Steps: trainer.Steps, PerCandidate: tuning.RunsVary(s.Space) || defaultShapeDiffers(trainer), Seeded: s.Seed != nil, SecureNoise: s.Seed == nil, Interrupted: interrupted,
		IncludesDefault: spec.Default != nil, DefaultWeight: spec.DefaultWeight, SelectionShare: s.SelectionShare, Subsample: s.Subsample, Ledger: res.Ledger}
	if s.Subsample != 0 {
		rep.SubsampleRule = tuning.SubsampleRule
	}
	rep.Clipping, rep.AutoClipGamma = s.clippingFacts()
	rep.Baseline, _ = s.Baseline()
	rel := &Release{Report: rep, Ledger: res.Ledger, Delta: s.Delta, Accountant: "rdp"}
	diag := &NotPrivateDiagnostics{Runs: res.Diagnostics}
	if accName != "rdp" {
		// An approximate accountant: the ledger says what the release
		// claims, the tuner's event under it; the proved ε of the tuner's
		// own ledger goes beside it.
		if len(res.Ledger.Entries) > 0 {
			g, err := res.Ledger.Spent(accounting.RDP{}, s.Delta)
			rep.GenericEpsilon, _, _ = finiteEpsilon(g, err)
			rep.Ledger = ledgerOf(t.tu.Label(spec), t.tu.Event(trainer.Event(), spec))
		}
		rel.Ledger, rep.Accountant, rel.Accountant, rep.Approximate = rep.Ledger, accName, accName, true
	}
	if g, err := rel.Ledger.Spent(acc, s.Delta); err == nil {
		rep.Epsilon = g.Epsilon
		rel.Epsilon = &rep.Epsilon
	} else if tuneErr == nil {
		tuneErr = err
	}
	rep.EpsilonComponents = epsilonComponents(rel.Ledger, p.final != nil, fin.norm, trainer.Norm != nil, acc, s.Delta)
	if tuneErr != nil && !interrupted {
		// The runs so far touched the data: the ledger is released alone.
		rep.Failed, rel.Failed = releasedFailure(tuneErr, s.Data.Name), true
		return rel, diag, t.resv.done(res.Ledger, tuneErr)
	}
	base := trainer.Event()
	if trainer.Norm != nil {
		// One run as it would spend alone: with the estimate.
		base = accounting.Composed{Events: []accounting.Event{trainer.Norm.Event(), base}}
	}
	if b, err := acc.Epsilon(base, s.Delta); err == nil {
		rep.BaseEpsilon, rep.TuningOverhead = b.Epsilon, rep.Epsilon-b.Epsilon
	}
	if interrupted {
		return rel, diag, t.resv.done(res.Ledger, fmt.Errorf("interrupted: nothing released; the ledger still counts the whole tuning budget: %w", context.Canceled))
	}
	if res.Selected != nil && res.Model != nil {
		if err := t.releaseSelected(ctx, rep, rel, res, fin); err != nil {
			return rel, diag, t.resv.done(res.Ledger, err)
		}
	}
	return rel, diag, t.resv.done(res.Ledger, nil)
}

// releaseSelected puts the selected candidate, its released score, the
// released model and its test accuracy into rep and rel, with the
// settings of the released model's own run (the final run's, with one).
// An evaluation stopped by ctx leaves the test accuracy out.
func (t *centralTuning) releaseSelected(ctx context.Context, rep *TuneReport, rel *Release, res tuning.Result, fin finalOutcome) error {
	s, p, trainer := t.s, t.p, t.p.trainer
	rep.Selected, rep.SelectedChoices, rep.Fixed, rep.ValidationScore = res.Selected.Values, res.Selected.Labels, s.fixedReport(), &res.Score
	if fin.nothing {
		rep.NothingSelected, rep.ValidationScore = true, nil
	}
	if rep.Baseline != nil {
		chosen := s.isBaseline(rep.Baseline, res.Selected.Values, res.Selected.Labels)
		rep.Baseline.SelectedIsBaseline = &chosen
	}
	if trainer.ScoreNoise > 0 && !fin.nothing {
		rep.ValidationCount = &res.NoisyCount
	}
	m, err := dpsgd.Evaluate(ctx, res.Model, t.test.X, t.test.Y)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if err == nil {
		rep.TestAccuracy = &m.Accuracy
	}
	rel.Model, rel.Selected, rel.Score = res.Model, rep.Selected, rep.ValidationScore
	q, steps, sigma := rep.SamplingRate, rep.Steps, rep.BaseNoiseMultiplier
	h := trainer.Hyper()
	if p.final != nil {
		h, sigma = *p.final, p.final.Config.NoiseMultiplier
	}
	if _, cfg, err := h.Run(*res.Selected); err == nil {
		q, steps = cfg.SamplingRate, cfg.Steps // the released model's own run
	}
	if p.final != nil {
		rep.FinalNoiseMultiplier, rep.FinalSamplingRate, rep.FinalSteps = sigma, q, steps
	}
	rel.hyper = map[string]any{"selected": rep.Selected, "selected_choices": rep.SelectedChoices, "noise_multiplier": sigma,
		"sampling_rate": q, "steps": steps, "tuner": rep.Tuner}
	if rep.Clipping != "" {
		rel.hyper["clipping"], rel.hyper["auto_clip_gamma"] = rep.Clipping, rep.AutoClipGamma
	}
	return nil
}
