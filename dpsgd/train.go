package dpsgd

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/cpus"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/noise"
)

// ErrDiverged is wrapped by Train's error when the parameters stop being
// finite.
var ErrDiverged = errors.New("training diverged")

// Progress is reported after every step.
type Progress struct {
	Step, Steps int     // steps done, steps planned
	BatchSize   int     // this step's (Poisson) batch size
	Loss        float64 // this step's mean cross-entropy over its batch, nats (curator-side diagnostic)
}

// Result is what a Train run did.
type Result struct {
	// Steps is the number of steps completed (fewer than planned if interrupted).
	Steps int
	// Event is the privacy cost of the completed steps:
	// accounting.DPSGD(σ, q, Steps), or accounting.NonPrivate.
	Event accounting.Event
	// Stages is the ledger of the privacy-spending stages estimated
	// before the first step (PlannedStages: the data normalisation), one
	// entry per stage; empty when none was (no such layer, a non-private
	// run, or one that took them released). The run's whole cost is
	// Stages composed with Event.
	Stages accounting.Ledger
	// SecureNoise reports whether the noise was drawn in secure mode (see
	// NoiseMode).
	SecureNoise bool
	// MeanBatchSize is the mean realised batch size.
	MeanBatchSize float64
	// Timings is the time spent per phase (and, if the engine is Timed, per
	// layer) over the completed steps.
	Timings Timings
}

// PlannedEvent is the privacy event of a run of cfg on a network of arch,
// all its steps done: accounting.DPSGD(σ, q, cfg.Steps), composed after
// the events of the network's privacy-spending stages that the run
// estimates itself (PlannedStages: Composed{stage events…, DPSGD}), or
// accounting.NonPrivate. It is the most the run can spend, known before it
// starts, and what every calibration of a run's noise multiplier and every
// tuner's base event is made of.
func PlannedEvent(arch model.Arch, cfg Config) accounting.Event {
	steps := StepsEvent(cfg)
	stages := PlannedStages(arch, cfg)
	if len(stages.Entries) == 0 {
		return steps
	}
	c := accounting.Composed{}
	for _, e := range stages.Entries {
		c.Events = append(c.Events, e.Event)
	}
	c.Events = append(c.Events, steps)
	return c
}

// StepsEvent is the event of cfg's DP-SGD steps alone, without its
// privacy-spending stages: accounting.DPSGD(σ, q, cfg.Steps), or
// accounting.NonPrivate.
func StepsEvent(cfg Config) accounting.Event {
	if cfg.NonPrivate {
		return accounting.NonPrivate{Reason: "non-private SGD: no noise"}
	}
	return accounting.DPSGD(cfg.NoiseMultiplier, cfg.SamplingRate, cfg.Steps)
}

// Train runs cfg.Steps steps of DP-SGD (see the package doc) on net,
// updating net.Params in place (leaving the moving average of the iterates
// when cfg.EMADecay > 0, also after an interruption), with engine computing
// the clipped per-example sums (nil: the engine of NewEngineWorkers sized
// for the expected batch size, with as many workers as ctx gives cores —
// GOMAXPROCS unless a runner.ForEach call shares them — and at most 64; it
// is also the fastest non-private path, faster than gorgonia's own
// autodiff — see BenchmarkNonPrivateAutodiffStep). progress, if not nil,
// is called after every step.
//
// If ctx is cancelled, Train stops after the current step and returns the
// Result of the steps completed — whose Event must still be accounted,
// since those steps released their noisy gradients — together with ctx's
// error. It returns an error before any step if cfg is invalid.
func Train(ctx context.Context, net *model.Net, train *data.Dataset, cfg Config, engine Engine, progress func(Progress)) (res Result, err error) {
	t := &trainer{ctx: ctx, net: net, train: train, cfg: cfg, engine: engine, progress: progress}
	// However the run ends, its result counts the steps taken, and the
	// moving average replaces the iterates.
	defer func() { res = t.result() }()
	if err := t.start(); err != nil {
		return res, err
	}
	drop, err := t.cacheFirstStage()
	if err != nil {
		return res, err
	}
	defer drop()
	return res, t.run()
}

// trainer is a Train run under way: its inputs, its random streams, the
// state it updates (the iterates are net.Params) and what it has counted.
type trainer struct {
	ctx      context.Context
	net      *model.Net
	train    *data.Dataset
	cfg      Config
	engine   Engine
	timed    Timed // engine, if it breaks its time down
	progress func(Progress)

	// reproducible says the streams are seeded (and checkpointed); secure
	// that the noise is drawn in secure mode.
	reproducible, secure  bool
	samplingSrc, noiseSrc *rand.ChaCha8
	sampling, noiseRNG    *rand.Rand

	expected float64 // the expected batch size, the update's divisor
	clip     Clip
	std      float64 // the noise's standard deviation per coordinate

	// first is the first step this run takes: 0, or a resumed state's.
	first int
	// sum is a step's noisy gradient sum; velocity the momentum's; ema the
	// moving average of the iterates (nil without cfg.EMADecay).
	sum, velocity, ema []float32
	idx                []int // a step's batch
	normalised         bool  // the privacy-spending stages touched the data
	batches            float64
	res                Result
	sw                 stopwatch
}

// start checks the config and the data, opens the random streams, restores
// a resumed state — or else runs the privacy-spending stages' estimates
// (runStages) — builds the engine if none was given, and allocates the
// steps' buffers.
func (t *trainer) start() error {
	cfg := t.cfg
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("dpsgd: %w", err)
	}
	if t.train.N == 0 {
		return fmt.Errorf("dpsgd: empty training set %s", t.train.Name)
	}
	t.expected = cfg.ExpectedBatchSize
	if t.expected == 0 {
		t.expected = cfg.SamplingRate * float64(t.train.N)
	}
	t.secure = cfg.Noise.Secure(cfg.Seed) && !cfg.NonPrivate
	t.samplingSrc = randsrc.SourceFor(cfg.Seed, cfg.Key, "sampling")
	t.noiseSrc = randsrc.SourceFor(cfg.Seed, cfg.Key, "noise")
	t.reproducible = cfg.Seed != nil || cfg.Key != nil
	var err error
	if st := cfg.Resume; st != nil {
		err = t.restore(st)
	} else {
		t.normalised, err = runStages(t.ctx, t.net, t.train, cfg, t.secure)
	}
	if err != nil {
		return err
	}
	if t.engine == nil {
		if t.engine, err = NewEngineWorkers(t.net, max(1, int(math.Ceil(t.expected))), cpus.Of(t.ctx)); err != nil {
			return err
		}
	}
	t.timed, _ = t.engine.(Timed)
	t.sampling, t.noiseRNG = rand.New(t.samplingSrc), rand.New(t.noiseSrc)
	t.res.SecureNoise = t.secure
	t.clip = cfg.Clip()
	t.std = cfg.NoiseMultiplier * t.clip.Sensitivity() * plantedNoiseScale
	if cfg.NonPrivate {
		t.std = 0
	}
	t.allocate()
	return nil
}

// restore continues st's run: its iterates, buffers and streams (after
// checking that st fits the network and config), its step and its counts.
func (t *trainer) restore(st *State) error {
	if err := st.restore(t.net, t.cfg, t.reproducible, t.samplingSrc, t.noiseSrc); err != nil {
		return err
	}
	t.first, t.normalised, t.batches, t.res.Steps = st.Step, st.Normalised, st.Batches, st.Step
	return nil
}

// allocate makes the steps' buffers: the gradient sum, the velocity and
// the moving average (which starts at the iterates), the last two as a
// resumed state left them.
func (t *trainer) allocate() {
	if t.cfg.EMADecay > 0 {
		t.ema = append([]float32(nil), t.net.Params...)
	}
	t.sum = make([]float32, len(t.net.Params))
	t.velocity = make([]float32, len(t.net.Params))
	if st := t.cfg.Resume; st != nil {
		copy(t.velocity, st.Velocity)
		if t.ema != nil {
			copy(t.ema, st.EMA)
		}
	}
}

// cacheFirstStage has a native engine normalise a first group norm's fixed
// input once per example (firstStageCache) when at least two epochs remain
// to be run. drop releases the cache (a no-op when there is none).
func (t *trainer) cacheFirstStage() (drop func(), err error) {
	ne, ok := t.engine.(*nativeEngine)
	if ok && float64(t.cfg.Steps-t.first)*t.cfg.SamplingRate >= 2 {
		cached, err := ne.cacheFirstStage(t.ctx, t.train.X, t.train.N)
		if err != nil {
			return func() {}, err
		}
		if cached {
			return ne.dropFirstStage, nil
		}
	}
	return func() {}, nil
}

// run takes the steps from t.first to cfg.Steps, checkpointing every
// cfg.CheckpointEvery steps but after the last, and reporting progress
// after each.
func (t *trainer) run() error {
	cfg := t.cfg
	for i := t.first; i < cfg.Steps; i++ {
		if err := t.ctx.Err(); err != nil {
			return t.stop(err)
		}
		loss, err := t.step(i)
		if err != nil {
			return err
		}
		if cfg.Checkpoint != nil && cfg.CheckpointEvery > 0 && t.res.Steps%cfg.CheckpointEvery == 0 && t.res.Steps < cfg.Steps {
			if err := t.checkpoint(); err != nil {
				return err
			}
		}
		t.report(loss)
	}
	return nil
}

// stop ends a run that ctx stopped between two steps, with ctx's error
// err: the checkpoint then holds exactly the steps taken, so that a resume
// never runs a released step again.
func (t *trainer) stop(err error) error {
	if t.cfg.Checkpoint != nil && t.res.Steps > t.first {
		if cerr := t.checkpoint(); cerr != nil {
			return errors.Join(err, cerr)
		}
	}
	return err
}

// step takes step i: it samples a Poisson batch, sums the batch's clipped
// per-example gradients, adds the noise, and updates the iterates. It
// returns the batch's summed loss, and an error wrapping ErrDiverged when
// the step left parameters that are not finite.
func (t *trainer) step(i int) (loss float64, err error) {
	cfg := t.cfg
	lr := float32(cfg.Schedule.Rate(cfg.LearningRate, i, cfg.Steps))
	if cfg.LRDecay > 0 {
		lr *= float32(math.Pow(cfg.LRDecay, cfg.SamplingRate*float64(i)))
	}
	t.sw.start()
	t.idx = data.PoissonSample(t.idx, t.train.N, cfg.SamplingRate, t.sampling)
	t.res.Timings.Phase[PhaseSampling] += t.sw.lap()
	clear(t.sum)
	if loss, err = t.engine.ClippedSum(t.train.X, t.train.Y, t.idx, t.clip, t.sum); err != nil {
		return loss, err
	}
	engineTime := t.sw.lap()
	if t.timed != nil {
		t.timed.TakeTimings(&t.res.Timings)
	} else {
		t.res.Timings.Phase[PhaseForward] += engineTime // not broken down
	}
	noise.AddGaussian(t.sum, t.std, t.secure, t.noiseRNG)
	t.res.Timings.Phase[PhaseNoise] += t.sw.lap()
	finite := t.update(i, lr)
	t.res.Timings.Phase[PhaseUpdate] += t.sw.lap()
	t.res.Steps++
	t.res.Timings.Steps++
	t.batches += float64(len(t.idx))
	if !finite {
		return loss, fmt.Errorf("dpsgd: %w at step %d (non-finite parameters); lower the learning rate", ErrDiverged, t.res.Steps)
	}
	return loss, nil
}

// update moves the iterates with momentum by step i's noisy sum divided by
// the expected batch size, at rate lr, then their moving average, and
// reports whether the iterates are all finite.
func (t *trainer) update(i int, lr float32) bool {
	mu, scale := float32(t.cfg.Momentum), 1/t.expected
	velocity, params := t.velocity, t.net.Params
	finite := true
	for k, g := range t.sum {
		v := mu*velocity[k] + float32(float64(g)*scale)
		velocity[k] = v
		p := params[k] - lr*v
		params[k] = p
		finite = finite && !math.IsNaN(float64(p)) && !math.IsInf(float64(p), 0)
	}
	if ema := t.ema; ema != nil {
		s := float64(i)
		d := float32(min(t.cfg.EMADecay, (1+s)/(10+s)))
		for k, p := range params {
			ema[k] = d*ema[k] + (1-d)*p
		}
	}
	return finite
}

// report hands progress, if any, the step just taken, whose batch summed
// loss.
func (t *trainer) report(loss float64) {
	if t.progress == nil {
		return
	}
	p := Progress{Step: t.res.Steps, Steps: t.cfg.Steps, BatchSize: len(t.idx)}
	if len(t.idx) > 0 {
		p.Loss = loss / float64(len(t.idx))
	}
	t.progress(p)
}

// checkpoint hands cfg.Checkpoint the state after the steps taken: the
// iterates, buffers, velocity and moving average as they are (not copied),
// the counts and, for a seeded run, the streams.
func (t *trainer) checkpoint() error {
	st := State{Step: t.res.Steps, Params: t.net.Params, Buffers: t.net.Buffers, Velocity: t.velocity, EMA: t.ema, Normalised: t.normalised, Batches: t.batches}
	if t.reproducible {
		var err error
		if st.Sampling, err = t.samplingSrc.MarshalBinary(); err != nil {
			return err
		}
		if st.Noise, err = t.noiseSrc.MarshalBinary(); err != nil {
			return err
		}
	}
	if err := t.cfg.Checkpoint(st); err != nil {
		return fmt.Errorf("dpsgd: checkpoint after step %d: %w", t.res.Steps, err)
	}
	return nil
}

// result is the Result of the steps taken, however the run ended: their
// mean batch size, their event and the stages' ledger. It leaves the moving
// average of the iterates, if any, in net.Params.
func (t *trainer) result() Result {
	res := t.res
	if res.Steps > 0 {
		res.MeanBatchSize = t.batches / float64(res.Steps)
	}
	if t.ema != nil && res.Steps > 0 {
		copy(t.net.Params, t.ema)
	}
	done := t.cfg
	done.Steps = res.Steps
	res.Event = StepsEvent(done)
	if t.normalised && !t.cfg.NonPrivate {
		res.Stages = PlannedStages(t.net.Arch, t.cfg)
	}
	return res
}

// Check returns an error when s cannot continue cfg's run of net: a step
// outside [1, cfg.Steps), parameters, velocities, buffers or a moving
// average of other sizes than net's and cfg's, a value that is not finite,
// a seeded run's random streams missing, or a data normalisation flag
// other than cfg's. A resume calls it before it charges a budget or reads
// the data.
func (s *State) Check(net *model.Net, cfg Config) error {
	if err := s.check(net, cfg, cfg.Seed != nil || cfg.Key != nil); err != nil {
		return err
	}
	for _, v := range [][]float32{s.Params, s.Buffers, s.Velocity, s.EMA} {
		for _, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return fmt.Errorf("dpsgd: the resumed state holds a value that is not finite (%v)", f)
			}
		}
	}
	return nil
}

// restore loads s into net and the streams, after checking that it fits
// net and cfg.
func (s *State) restore(net *model.Net, cfg Config, reproducible bool, sampling, noise *rand.ChaCha8) error {
	if err := s.check(net, cfg, reproducible); err != nil {
		return err
	}
	if reproducible {
		if err := sampling.UnmarshalBinary(s.Sampling); err != nil {
			return fmt.Errorf("dpsgd: the sampling stream: %w", err)
		}
		if err := noise.UnmarshalBinary(s.Noise); err != nil {
			return fmt.Errorf("dpsgd: the noise stream: %w", err)
		}
	}
	copy(net.Params, s.Params)
	copy(net.Buffers, s.Buffers)
	return nil
}

// check is Check without the scan of the values.
func (s *State) check(net *model.Net, cfg Config, reproducible bool) error {
	switch {
	case s.Step < 1 || s.Step >= cfg.Steps:
		return fmt.Errorf("dpsgd: resuming at step %d of %d", s.Step, cfg.Steps)
	case len(s.Params) != len(net.Params) || len(s.Velocity) != len(net.Params) || len(s.Buffers) != len(net.Buffers):
		return fmt.Errorf("dpsgd: the resumed state has %d parameters, %d velocities and %d buffers; the network %d and %d",
			len(s.Params), len(s.Velocity), len(s.Buffers), len(net.Params), len(net.Buffers))
	case (cfg.EMADecay > 0) != (s.EMA != nil) || (s.EMA != nil && len(s.EMA) != len(net.Params)):
		return fmt.Errorf("dpsgd: the resumed state's moving average does not match the config")
	case reproducible && (s.Sampling == nil || s.Noise == nil):
		return fmt.Errorf("dpsgd: a seeded run resumed without its random streams")
	case s.Normalised != (len(OwnStages(net.Arch, cfg)) > 0):
		// The ledger counts the stages from this flag (a non-private run's
		// estimate, exact, counts nothing): it must be what the network
		// and config say, whatever the file claims.
		return fmt.Errorf("dpsgd: the resumed state says the data normalisation ran: %v; the config: %v", s.Normalised, len(OwnStages(net.Arch, cfg)) > 0)
	}
	return nil
}
