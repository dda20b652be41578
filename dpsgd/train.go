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
// GOMAXPROCS unless a runner.ForEach call shares them — and at most 8; it
// is also the fastest non-private path, faster than gorgonia's own
// autodiff — see BenchmarkNonPrivateAutodiffStep). progress, if not nil,
// is called after every step.
//
// If ctx is cancelled, Train stops after the current step and returns the
// Result of the steps completed — whose Event must still be accounted,
// since those steps released their noisy gradients — together with ctx's
// error. It returns an error before any step if cfg is invalid.
func Train(ctx context.Context, net *model.Net, train *data.Dataset, cfg Config, engine Engine, progress func(Progress)) (res Result, err error) {
	var batches float64
	var normalised bool // the privacy-spending stages touched the data
	var ema []float32   // the moving average of the iterates, if cfg.EMADecay > 0
	defer func() {
		if res.Steps > 0 {
			res.MeanBatchSize = batches / float64(res.Steps)
		}
		if ema != nil && res.Steps > 0 {
			copy(net.Params, ema)
		}
		done := cfg
		done.Steps = res.Steps
		res.Event = StepsEvent(done)
		if normalised && !cfg.NonPrivate {
			res.Stages = PlannedStages(net.Arch, cfg)
		}
	}()
	if err := cfg.Validate(); err != nil {
		return res, fmt.Errorf("dpsgd: %w", err)
	}
	if train.N == 0 {
		return res, fmt.Errorf("dpsgd: empty training set %s", train.Name)
	}
	expected := cfg.ExpectedBatchSize
	if expected == 0 {
		expected = cfg.SamplingRate * float64(train.N)
	}
	secure := cfg.Noise.Secure(cfg.Seed) && !cfg.NonPrivate
	samplingSrc := randsrc.SourceFor(cfg.Seed, cfg.Key, "sampling")
	noiseSrc := randsrc.SourceFor(cfg.Seed, cfg.Key, "noise")
	reproducible := cfg.Seed != nil || cfg.Key != nil
	first := 0
	if st := cfg.Resume; st != nil {
		if err := st.restore(net, cfg, reproducible, samplingSrc, noiseSrc); err != nil {
			return res, err
		}
		first, normalised, batches, res.Steps = st.Step, st.Normalised, st.Batches, st.Step
	} else if normalised, err = runStages(ctx, net, train, cfg, secure); err != nil {
		return res, err
	}
	if engine == nil {
		if engine, err = NewEngineWorkers(net, max(1, int(math.Ceil(expected))), cpus.Of(ctx)); err != nil {
			return res, err
		}
	}
	sampling, noiseRNG := rand.New(samplingSrc), rand.New(noiseSrc)
	res.SecureNoise = secure
	clip := cfg.Clip()
	std := cfg.NoiseMultiplier * clip.Sensitivity() * plantedNoiseScale
	if cfg.NonPrivate {
		std = 0
	}
	if cfg.EMADecay > 0 {
		ema = append([]float32(nil), net.Params...)
	}
	sum := make([]float32, len(net.Params))
	velocity := make([]float32, len(net.Params))
	if st := cfg.Resume; st != nil {
		copy(velocity, st.Velocity)
		if ema != nil {
			copy(ema, st.EMA)
		}
	}
	// A run of at least two epochs to go normalises a first group norm's
	// fixed input once per example (firstStageCache).
	if ne, ok := engine.(*nativeEngine); ok && float64(cfg.Steps-first)*cfg.SamplingRate >= 2 {
		cached, err := ne.cacheFirstStage(ctx, train.X, train.N)
		if err != nil {
			return res, err
		}
		if cached {
			defer ne.dropFirstStage()
		}
	}
	timed, _ := engine.(Timed)
	var sw stopwatch
	var idx []int
	mu := float32(cfg.Momentum)
	scale := 1 / expected
	checkpoint := func() error {
		st := State{Step: res.Steps, Params: net.Params, Buffers: net.Buffers, Velocity: velocity, EMA: ema, Normalised: normalised, Batches: batches}
		if reproducible {
			var err error
			if st.Sampling, err = samplingSrc.MarshalBinary(); err != nil {
				return err
			}
			if st.Noise, err = noiseSrc.MarshalBinary(); err != nil {
				return err
			}
		}
		if err := cfg.Checkpoint(st); err != nil {
			return fmt.Errorf("dpsgd: checkpoint after step %d: %w", res.Steps, err)
		}
		return nil
	}
	for step := first; step < cfg.Steps; step++ {
		if err := ctx.Err(); err != nil {
			// Stopped between two steps: the checkpoint holds exactly the
			// steps taken, so that a resume never runs a released step
			// again.
			if cfg.Checkpoint != nil && res.Steps > first {
				if cerr := checkpoint(); cerr != nil {
					return res, errors.Join(err, cerr)
				}
			}
			return res, err
		}
		lr := float32(cfg.Schedule.Rate(cfg.LearningRate, step, cfg.Steps))
		if cfg.LRDecay > 0 {
			lr *= float32(math.Pow(cfg.LRDecay, cfg.SamplingRate*float64(step)))
		}
		sw.start()
		idx = data.PoissonSample(idx, train.N, cfg.SamplingRate, sampling)
		res.Timings.Phase[PhaseSampling] += sw.lap()
		clear(sum)
		loss, err := engine.ClippedSum(train.X, train.Y, idx, clip, sum)
		if err != nil {
			return res, err
		}
		engineTime := sw.lap()
		if timed != nil {
			timed.TakeTimings(&res.Timings)
		} else {
			res.Timings.Phase[PhaseForward] += engineTime // not broken down
		}
		noise.AddGaussian(sum, std, secure, noiseRNG)
		res.Timings.Phase[PhaseNoise] += sw.lap()
		finite := true
		for k, g := range sum {
			v := mu*velocity[k] + float32(float64(g)*scale)
			velocity[k] = v
			p := net.Params[k] - lr*v
			net.Params[k] = p
			finite = finite && !math.IsNaN(float64(p)) && !math.IsInf(float64(p), 0)
		}
		if ema != nil {
			t := float64(step)
			d := float32(min(cfg.EMADecay, (1+t)/(10+t)))
			for k, p := range net.Params {
				ema[k] = d*ema[k] + (1-d)*p
			}
		}
		res.Timings.Phase[PhaseUpdate] += sw.lap()
		res.Steps++
		res.Timings.Steps++
		batches += float64(len(idx))
		if !finite {
			return res, fmt.Errorf("dpsgd: %w at step %d (non-finite parameters); lower the learning rate", ErrDiverged, res.Steps)
		}
		if cfg.Checkpoint != nil && cfg.CheckpointEvery > 0 && res.Steps%cfg.CheckpointEvery == 0 && res.Steps < cfg.Steps {
			if err := checkpoint(); err != nil {
				return res, err
			}
		}
		if progress != nil {
			p := Progress{Step: res.Steps, Steps: cfg.Steps, BatchSize: len(idx)}
			if len(idx) > 0 {
				p.Loss = loss / float64(len(idx))
			}
			progress(p)
		}
	}
	return res, nil
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
	case s.Normalised != (len(OwnStages(net.Arch, cfg)) > 0 && !cfg.NonPrivate):
		// The ledger counts the stages from this flag: it must be what the
		// network and config say, whatever the file claims.
		return fmt.Errorf("dpsgd: the resumed state says the data normalisation ran: %v; the config: %v", s.Normalised, len(OwnStages(net.Arch, cfg)) > 0 && !cfg.NonPrivate)
	}
	return nil
}
