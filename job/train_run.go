package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// trainRelease runs a checked training job (s.plan) in its steps: refuse an
// unfinished run's checkpoint directory and lock a fresh one, build the
// network, charge the budget and load the data (open), set the run up
// (setUp), train, and release what ran (release).
func trainRelease(ctx context.Context, s TrainSpec) (*Release, *NotPrivateDiagnostics, error) {
	began := time.Now()
	fresh := s.Checkpoint != "" && s.resume == nil
	if fresh {
		if err := s.refuseUnfinished(); err != nil {
			return nil, nil, err
		}
		if s.Budget != "" {
			// The reservation a resume settles must be this run's alone
			// (budget.Settle): tag its label.
			s.Label += runTag()
		}
	}
	cfg, acc, err := s.plan()
	if err != nil {
		return nil, nil, err
	}
	if fresh {
		unlock, err := s.lockCheckpoint()
		if err != nil {
			return nil, nil, err
		}
		defer unlock()
	}
	if s.Checkpoint != "" {
		defer s.removeEmptyCheckpoint()
	}
	t, err := s.open(ctx, cfg, acc)
	if err != nil {
		return nil, nil, err
	}
	engine, err := t.setUp()
	if err != nil {
		return nil, nil, t.resv.done(accounting.Ledger{}, err)
	}
	run, trainErr := dpsgd.Train(ctx, t.net, t.train, t.cfg, engine, t.s.progress(acc, t.cfg, t.spent()))
	if s.Checkpoint != "" && trainErr == nil {
		// Finished: nothing to resume. An interrupted or failed run keeps
		// its checkpoint (a resume continues from it).
		removeCheckpoint(s.Checkpoint, s.Warn)
	}
	return t.release(ctx, began, run, trainErr)
}

// refuseUnfinished refuses a fresh run whose checkpoint directory holds an
// unfinished run's checkpoint.
func (s TrainSpec) refuseUnfinished() error {
	if _, err := os.Stat(filepath.Join(s.Checkpoint, checkpointFile)); err == nil {
		return invalidf("%s holds an unfinished run: continue it with --resume, or remove it to start over", s.Checkpoint)
	}
	return nil
}

// lockCheckpoint makes a fresh checkpointed run's key and locks its
// checkpoint directory, refusing it if a run that held the lock until a
// moment ago left a checkpoint there; unlock releases the lock.
func (s *TrainSpec) lockCheckpoint() (unlock func(), err error) {
	// The key must not be kept with what it authenticates: the run's
	// curator and release directories (OUT-curator and OUT), or the
	// checkpoint directory a Go caller named.
	outside := []string{s.Checkpoint}
	if curator := filepath.Dir(s.Checkpoint); strings.HasSuffix(curator, "-curator") {
		outside = []string{curator, strings.TrimSuffix(curator, "-curator")}
	}
	if s.checkpointKey, err = checkpointKey(true, outside...); err != nil {
		return nil, err
	}
	if unlock, err = openCheckpointDir(s.Checkpoint); err != nil {
		return nil, err
	}
	if err := s.refuseUnfinished(); err != nil {
		// Written by a run that held the lock until a moment ago.
		unlock()
		return nil, err
	}
	return unlock, nil
}

// removeEmptyCheckpoint removes a checkpoint directory that holds nothing
// to resume, so that a run leaves no empty directory.
func (s TrainSpec) removeEmptyCheckpoint() {
	if _, err := os.Stat(filepath.Join(s.Checkpoint, checkpointFile)); err != nil {
		removeCheckpoint(s.Checkpoint, nil)
	}
}

// trainRun is a training job under way: its spec and resolved config, its
// accountant, its charged budget, its network and, once loaded, its data
// and a checkpointed run's lineage.
type trainRun struct {
	s   TrainSpec
	cfg dpsgd.Config
	acc accounting.Accountant
	// steps is the number of steps planned.
	steps int
	// calibrated says the noise multiplier is known: given, calibrated,
	// or none (a non-private run).
	calibrated  bool
	resv        *charge
	net         *model.Net
	train, test *data.Dataset
	lin         lineage
}

// open builds the network, refuses a resumed state that cannot continue it
// (before the budget or the data: the checkpoint is kept), prepares the
// run before reading the data when that is quick — under RDP, or with the
// noise multiplier known — and loads the data.
func (s TrainSpec) open(ctx context.Context, cfg dpsgd.Config, acc accounting.Accountant) (*trainRun, error) {
	t := &trainRun{s: s, cfg: cfg, acc: acc, steps: cfg.Steps, calibrated: s.NonPrivate || s.NoiseMultiplier != 0}
	var err error
	if t.net, err = model.New(s.Data.Arch, randsrc.New(cfg.Seed, "init")); err != nil {
		return nil, err
	}
	if ck := s.resume; ck != nil {
		if err := ck.state.Check(t.net, cfg); err != nil {
			return nil, invalidf("%s: %v", s.Checkpoint, err)
		}
		if ck.Start < 0 || ck.Start > ck.state.Step {
			return nil, invalidf("%s: the checkpoint's process started at step %d, after its step %d", s.Checkpoint, ck.Start, ck.state.Step)
		}
	}
	if _, isRDP := acc.(accounting.RDP); isRDP || t.calibrated {
		if err := t.prepare(ctx); err != nil {
			return nil, err
		}
	}
	if err := t.load(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// prepare calibrates the noise multiplier to the spec's ε unless it is
// known, then charges the budget file with the planned run's worst case,
// or for a resume takes the reservation of the run it continues.
func (t *trainRun) prepare(ctx context.Context) error {
	s := t.s
	if !t.calibrated {
		sigma, err := accounting.CalibrateNoise(ctx, t.acc, func(z float64) accounting.Event {
			c := t.cfg
			c.NoiseMultiplier = z
			return dpsgd.PlannedEvent(s.Data.Arch, c)
		}, s.Epsilon, s.Delta)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return err
			}
			return invalid(err)
		}
		t.cfg.NoiseMultiplier, t.calibrated = sigma, true
	}
	var err error
	if s.resume != nil {
		// The resume's label is the run's from now on.
		t.resv, err = t.s.resumeCharge(t.cfg)
		return err
	}
	bind := ""
	if s.Checkpoint != "" {
		bind = binding(s.settings(t.cfg), 0, t.cfg.Steps)
	}
	t.resv, err = reserveBound(s.Budget, s.Seed != nil, s.Data.Name, "train", s.Label, bind, plannedLedger("dpsgd training", s.Data.Arch, t.cfg))
	return err
}

// load reads the data (arranged as the spec says, if it does), prepares
// the run if open did not, and traces a checkpointed run's lineage.
func (t *trainRun) load(ctx context.Context) error {
	s := t.s
	train, test, err := s.Data.loadCtx(ctx, s.Warn)
	if err == nil && s.arrange != nil {
		train, test, err = s.arrange(train, test)
	}
	if err != nil {
		return t.resv.done(accounting.Ledger{}, err)
	}
	t.train, t.test = train, test
	if t.resv == nil {
		if err := t.prepare(ctx); err != nil {
			return err
		}
	}
	if s.Checkpoint == "" {
		return nil
	}
	if err := t.trace(); err != nil {
		return t.resv.done(accounting.Ledger{}, err)
	}
	return nil
}

// trace records a checkpointed run's lineage: its data's digest and its
// directory. A resume refuses data other than its checkpoint's and counts
// the earlier processes of its run, from the checkpoint's process start
// on, at their worst case.
func (t *trainRun) trace() error {
	s, lin := t.s, &t.lin
	lin.Data = dataDigest(t.train, t.test)
	var err error
	if lin.Dir, err = filepath.Abs(s.Checkpoint); err != nil {
		return err
	}
	ck := s.resume
	if ck == nil {
		return nil
	}
	if lin.Data != ck.Data {
		return invalidf("%s: the data is not the data the checkpointed run read (its digest differs): resume refused, the checkpoint is kept", s.Checkpoint)
	}
	lin.Start = ck.state.Step
	lin.Prior = accounting.Ledger{Entries: slices.Clone(ck.Prior.Entries)}
	prev := processLedger(fmt.Sprintf("an earlier process of this run, steps %d–%d (counted at its worst case: it may have run past the checkpoint)", ck.Start+1, t.steps), s.Data.Arch, t.cfg, ck.Start)
	lin.Prior.Entries = append(lin.Prior.Entries, prev.Entries...)
	return nil
}

// setUp announces the resolved config, builds the engine the spec asks for
// (nil: dpsgd.Train's own), and has a checkpointed run write a checkpoint
// every epoch; a resume continues from its state and first writes this
// process into the lineage.
func (t *trainRun) setUp() (dpsgd.Engine, error) {
	s := t.s
	if s.Started != nil {
		s.Started(t.cfg)
	}
	var engine dpsgd.Engine
	if s.engine != nil {
		var err error
		if engine, err = s.engine(t.net, t.cfg); err != nil {
			return nil, err
		}
	}
	if s.Checkpoint == "" {
		return engine, nil
	}
	kept := s.settings(t.cfg)
	if ck := s.resume; ck != nil {
		kept = ck.settings
		kept.Label = s.Label
		t.cfg.Resume = ck.state
		// This process is in the lineage from now on, before its first
		// step: a resume of a resume killed before its next checkpoint
		// still counts it (and settles its reservation).
		if err := writeCheckpoint(s.Checkpoint, s.checkpointKey, kept, t.lin, *ck.state); err != nil {
			return nil, err
		}
	}
	t.cfg.CheckpointEvery = t.steps / s.Epochs
	lin := t.lin
	t.cfg.Checkpoint = func(st dpsgd.State) error { return writeCheckpoint(s.Checkpoint, s.checkpointKey, kept, lin, st) }
	return engine, nil
}

// lineageCounts says the run states everything that ran for its model: a
// resumed unseeded private run, whose earlier processes count at their
// worst case before its own steps. A seeded one re-ran the lost steps with
// the same noise: its ledger is the uninterrupted run's.
func (t *trainRun) lineageCounts() bool {
	return t.s.resume != nil && t.s.Seed == nil && !t.s.NonPrivate
}

// spent is the event of everything that ran for the model after a number
// of steps, for the ε shown before each epoch: the run's planned event cut
// to those steps or, when the lineage counts, the lineage's.
func (t *trainRun) spent() func(steps int) accounting.Event {
	cfg, lin, arch := t.cfg, t.lin, t.s.Data.Arch
	if t.lineageCounts() {
		return func(steps int) accounting.Event {
			done := cfg
			done.Steps = steps - lin.Start
			l := lineageLedger(lin.Prior, lin.Start, dpsgd.StepsEvent(done))
			return l.Event()
		}
	}
	return func(steps int) accounting.Event {
		done := cfg
		done.Steps = steps
		return dpsgd.PlannedEvent(arch, done)
	}
}

// ledger is what the run releases and is charged: its stages and its
// steps, or its lineage's when that counts. A private run stopped early
// is released with the whole planned run's ledger, the worst case the
// budget file keeps charged: when to stop may have followed the training
// loss shown live, which is not private, so the steps not taken still
// count.
func (t *trainRun) ledger(run dpsgd.Result, interrupted bool) (l accounting.Ledger, stoppedEarly bool) {
	cfg, lin := t.cfg, t.lin
	l = trainLedger("dpsgd training", run.Stages, run.Event)
	if t.lineageCounts() {
		done := cfg
		done.Steps = run.Steps - lin.Start
		l = lineageLedger(lin.Prior, lin.Start, dpsgd.StepsEvent(done))
	}
	stoppedEarly = interrupted && !t.s.NonPrivate && run.Steps < t.steps
	if stoppedEarly {
		l = plannedLedger("dpsgd training (planned: stopped early)", t.s.Data.Arch, cfg)
		if t.lineageCounts() {
			rest := cfg
			rest.Steps = t.steps - lin.Start
			l = lineageLedger(lin.Prior, lin.Start, dpsgd.StepsEvent(rest))
		}
	}
	return l, stoppedEarly
}

// release releases what ran: the report and ledger of a failed run alone
// (fail); else the model, with its test metrics unless interrupted.
func (t *trainRun) release(ctx context.Context, began time.Time, run dpsgd.Result, trainErr error) (*Release, *NotPrivateDiagnostics, error) {
	interrupted := errors.Is(trainErr, context.Canceled)
	ledger, stoppedEarly := t.ledger(run, interrupted)
	diag := &NotPrivateDiagnostics{MeanBatchSize: run.MeanBatchSize}
	rel, rep := t.report(run, ledger, interrupted, stoppedEarly)
	if trainErr != nil && !interrupted {
		return rel, diag, t.fail(rel, rep, ledger, trainErr)
	}
	if !interrupted {
		m, err := dpsgd.Evaluate(ctx, t.net, t.test.X, t.test.Y)
		interrupted = errors.Is(err, context.Canceled)
		if err != nil && !interrupted {
			return rel, diag, t.resv.done(ledger, err)
		}
		if err == nil {
			rep.TestAccuracy, rep.TestLoss = &m.Accuracy, &m.Loss
		}
	}
	rep.Interrupted = interrupted
	rel.Model = t.net
	rel.hyper = t.hyper(run, rep)
	diag.WallSeconds = time.Since(began).Seconds()
	if interrupted {
		return rel, diag, t.resv.done(ledger, fmt.Errorf("interrupted after %d of %d steps: %w", run.Steps, t.steps, context.Canceled))
	}
	return rel, diag, t.resv.done(ledger, nil)
}

// report is the release of what ran, without its model: the report of the
// run's settings, its steps and the ε of ledger (noted as the whole
// planned run's when it stopped early), and its data normalisation's own
// ε; a non-private run states no δ and no accountant.
func (t *trainRun) report(run dpsgd.Result, ledger accounting.Ledger, interrupted, stoppedEarly bool) (*Release, *TrainReport) {
	s, cfg, acc, steps := t.s, t.cfg, t.acc, t.steps
	rep := &TrainReport{Dataset: s.Data.Name, NominalSize: s.Data.NominalN, Private: !s.NonPrivate, Delta: s.Delta, Accountant: acc.Name(),
		NoiseMultiplier: cfg.NoiseMultiplier, ClipNorm: cfg.ClipNorm, SamplingRate: cfg.SamplingRate, BatchSize: s.BatchSize,
		Steps: run.Steps, PlannedSteps: steps, Epochs: float64(run.Steps) / float64(steps/s.Epochs), LearningRate: s.LearningRate,
		Momentum: s.Momentum, Schedule: s.Schedule.String(), EMADecay: s.EMADecay, Seeded: cfg.Seed != nil, SecureNoise: run.SecureNoise, Interrupted: interrupted, Ledger: ledger}
	rep.Clipping, rep.AutoClipGamma = clippingFacts(cfg)
	rel := &Release{Report: rep, Ledger: ledger, Delta: s.Delta, Accountant: acc.Name()}
	if norm := dpsgd.StagesEvent(s.Data.Arch, cfg); norm != nil && !s.NonPrivate {
		rep.NormNoiseMultiplier = dpsgd.OwnStages(s.Data.Arch, cfg)[0].Mechanism.Sigma()
		g, err := acc.Epsilon(norm, s.Delta)
		rep.NormEpsilon, _, _ = finiteEpsilon(g, err)
	}
	if !s.NonPrivate {
		g, err := ledger.Spent(acc, s.Delta)
		rep.Epsilon, rep.RDPOrder, rep.EpsilonNote = finiteEpsilon(g, err)
		if stoppedEarly && rep.EpsilonNote == "" {
			rep.EpsilonNote = fmt.Sprintf("interrupted after %d of %d steps: ε is the full planned run's, as the budget is charged, since when to stop may have followed the non-private training loss", run.Steps, steps)
		}
	} else {
		rep.Delta, rep.Accountant, rel.Delta, rel.Accountant = 0, "", 0, ""
	}
	rel.Epsilon = rep.Epsilon
	return rel, rep
}

// fail marks the release of a run that failed (not interrupted) failed:
// the steps it took touched the data, so their ledger and its ε are
// released alone. A failed run that keeps its last epoch's checkpoint is
// charged at its worst case, as a resume, which may continue it, counts it.
// The report says only that it failed (failedTraining): err's text, which
// may name an example or a step, goes back to the caller alone.
func (t *trainRun) fail(rel *Release, rep *TrainReport, ledger accounting.Ledger, err error) error {
	rep.Failed, rel.Failed = failedTraining, true
	if _, serr := os.Stat(filepath.Join(t.s.Checkpoint, checkpointFile)); t.s.Checkpoint != "" && serr == nil {
		t.resv.whole = true
		err = fmt.Errorf("%w (the checkpoint of the last epoch is kept in %s: --resume continues from it)", err, t.s.Checkpoint)
	}
	return t.resv.done(ledger, err)
}

// hyper is the hyperparameters saved with the model.
func (t *trainRun) hyper(run dpsgd.Result, rep *TrainReport) map[string]any {
	s, cfg := t.s, t.cfg
	h := map[string]any{"noise_multiplier": cfg.NoiseMultiplier, "clip_norm": cfg.ClipNorm, "sampling_rate": cfg.SamplingRate,
		"steps": run.Steps, "learning_rate": s.LearningRate, "momentum": s.Momentum, "lr_schedule": s.Schedule.String(), "ema_decay": s.EMADecay, "private": !s.NonPrivate}
	if rep.Clipping != "" {
		h["clipping"], h["auto_clip_gamma"] = rep.Clipping, rep.AutoClipGamma
	}
	return h
}
