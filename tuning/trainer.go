package tuning

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/noise"
	"github.com/dptune/dptune/runner"
)

// Run is what one training run of a candidate gives the tuner.
type Run struct {
	Model *model.Net // nil when Failed
	Score float64    // higher is better; released only for the selected run
	// Failed marks a run whose parameters stopped being finite: it has no
	// model and a tuner never selects it.
	Failed bool
	// NoisyCount is the private score's released integer (correct
	// validation predictions plus discrete Gaussian noise); 0 when the
	// validation set is public.
	NoisyCount int64
}

// Trainer is the base algorithm the tuners wrap: candidate hyperparameters
// and training data in, model and score out. Every run has the same privacy
// event, whatever the candidate.
type Trainer interface {
	// Event is the privacy event of one run.
	Event() accounting.Event
	// Train trains candidate c. seed, if not nil, makes the run
	// reproducible.
	Train(ctx context.Context, c Candidate, seed *uint64) (Run, error)
}

// DPSGDTrainer is the default Trainer: dpsgd.Train with the candidate's
// hyperparameters (Hyper.Run: learning rate, clipping norm, momentum,
// schedule, batch size, epochs, network; a dimension the space leaves out
// takes the fixed value here) and one noise multiplier fixed by the budget;
// the score is accuracy on Val. When the candidates differ in batch size,
// epochs or network, Space says so and every run is counted as the
// costliest (Hyper.Event).
//
// Every size here is nominal — public, fixed before the data is read, never
// a count of the private data: SamplingRate and ExpectedBatchSize come from
// the training set's declared size, ValSize is the declared validation size.
//
// Val is either declared public by the user (ScoreNoise = 0: data disjoint
// from the private training data, no privacy cost) or private. A private
// score is released as an integer: the number of correct validation
// predictions plus discrete Gaussian noise N_ℤ(0, ScoreNoise²) (Canonne,
// Kamath, Steinke 2020; noise.NoisyCount), divided by ValSize. Under
// add/remove adjacency the count has sensitivity 1, so the score is the
// DiscreteGaussian event with noise multiplier ScoreNoise, joined to the
// run's event. No float with float noise is released (Mironov 2012).
type DPSGDTrainer struct {
	Arch              model.Arch
	Data              *data.Dataset // training data (private)
	Val               *data.Dataset
	ValSize           int // nominal validation size n_val: the divisor of a private score
	NoiseMultiplier   float64
	SamplingRate      float64
	ExpectedBatchSize float64 // nominal qN, the divisor of DP-SGD's noisy sum
	Steps             int
	Momentum          float64
	LearningRate      float64 // used when the space has no LearningRate dimension
	ClipNorm          float64 // used when the space has no ClipNorm dimension; 1 under automatic clipping
	Schedule          dpsgd.Schedule
	// Clipping and AutoClipGamma are every run's clipping rule
	// (dpsgd.Config's): flat clipping (the zero value), or automatic
	// clipping with stability constant AutoClipGamma, whose space has no
	// ClipNorm dimension (the job refuses one; a candidate that sets it
	// cannot run).
	Clipping      dpsgd.Clipping
	AutoClipGamma float64
	// NominalN and Epochs give a candidate's batch size and epochs their
	// sampling rate and steps (Hyper); Networks are the resolved choices
	// of a Network dimension; Space is the tuning's, whose batch sizes,
	// epochs and networks the Event covers. All may be zero for a space
	// without those dimensions; Train refuses a candidate whose batch
	// size, epochs or network Space does not hold (Covers), so that no run
	// costs more than Event counts.
	NominalN, Epochs int
	Networks         map[string]model.Arch
	Space            Space
	// Default, if not nil, is the one candidate beside Space's grid that
	// Train accepts (DefaultCandidate): Event counts its run too.
	Default *Candidate
	// Norm, if not nil, is the tuning's one data normalisation
	// (SharedDataNorm): every run of a network with its datanorm layer
	// takes its released estimate, and Event does not count it (the
	// tuning's ledger does, once).
	Norm *SharedDataNorm
	// Subsample, if not 0, is the ratio of the tuning subset Data is
	// (Hyper.Subsample): each run's expected batch is that ratio of its
	// batch size; its sampling rate, steps and event are unchanged.
	Subsample  float64
	ScoreNoise float64 // noise multiplier of the private count; 0: Val is public
	// Noise is how the runs draw their Gaussian noise (dpsgd.NoiseAuto:
	// secure without a seed). A caller that seeds every run from a secret
	// key (a durable runner's) sets dpsgd.NoiseSecure.
	Noise dpsgd.NoiseMode
	// Key, if not nil, is the secret 256-bit key of the one run this
	// trainer makes (a durable runner's job, built per run): Train then
	// ignores its seed and draws the initial parameters, the sampling, the
	// noise and the score's noise from the key's streams.
	Key *randsrc.Key
}

// EventFor is the event of one run with noise multiplier sigma: the DP-SGD
// steps (after the run's own data normalisation, for a network with a
// datanorm layer: dpsgd.PlannedEvent — none when it takes Norm's released
// estimate), plus the noisy score when Val is private.
//
// A space whose candidates cannot all run (Hyper.CheckRuns, which the job
// checks first) gives a NonPrivate event: ε = ∞, never under-counted.
func (t *DPSGDTrainer) EventFor(sigma float64) accounting.Event {
	e, err := t.Hyper().Event(t.Space, sigma)
	if err != nil {
		e = accounting.NonPrivate{Reason: err.Error()}
	}
	if t.ScoreNoise > 0 {
		return accounting.Composed{Events: []accounting.Event{e,
			accounting.DiscreteGaussian{NoiseMultiplier: t.ScoreNoise, Sensitivity: 1}}}
	}
	return e
}

// Event implements Trainer.
func (t *DPSGDTrainer) Event() accounting.Event { return t.EventFor(t.NoiseMultiplier) }

// Train implements Trainer. A run whose parameters stop being finite
// (dpsgd.ErrDiverged) fails: it returns a Run without a model, and its
// score is −∞, so it is never selected.
func (t *DPSGDTrainer) Train(ctx context.Context, c Candidate, seed *uint64) (Run, error) {
	if !isDefault(c, t.Default) {
		if err := Covers(t.Space, c); err != nil {
			return Run{}, err
		}
	}
	arch, cfg, err := t.Hyper().Run(c)
	if err != nil {
		return Run{}, err
	}
	net, err := model.New(arch, randsrc.For(seed, t.Key, "init"))
	if err != nil {
		return Run{}, err
	}
	cfg.NoiseMultiplier, cfg.Seed, cfg.Key, cfg.Noise = t.NoiseMultiplier, seed, t.Key, t.Noise
	if _, err := dpsgd.Train(ctx, net, t.Data, cfg, nil, stepHeartbeat(ctx)); err != nil {
		if errors.Is(err, dpsgd.ErrDiverged) {
			return Run{Score: math.Inf(-1), Failed: true}, nil
		}
		return Run{}, err
	}
	m, err := dpsgd.Evaluate(ctx, net, t.Val.X, t.Val.Y)
	if err != nil {
		return Run{}, err
	}
	if t.ScoreNoise == 0 {
		return Run{Model: net, Score: m.Accuracy}, nil
	}
	count, err := noise.NoisyCount(int64(m.Correct), t.ScoreNoise, randsrc.For(seed, t.Key, "score"))
	if err != nil {
		return Run{}, err
	}
	return Run{Model: net, Score: float64(count) / float64(t.ValSize), NoisyCount: count}, nil
}

// Hyper is how the trainer turns a candidate into a run.
func (t *DPSGDTrainer) Hyper() Hyper {
	return Hyper{Arch: t.Arch, Networks: t.Networks, NominalN: t.NominalN, Epochs: t.Epochs, Default: t.Default, Norm: t.Norm,
		Subsample: t.Subsample, Config: dpsgd.Config{SamplingRate: t.SamplingRate, ExpectedBatchSize: t.ExpectedBatchSize, Steps: t.Steps,
			LearningRate: t.LearningRate, ClipNorm: t.ClipNorm, Momentum: t.Momentum, Schedule: t.Schedule,
			Clipping: t.Clipping, AutoClipGamma: t.AutoClipGamma}}
}

// stepHeartbeat reports a run's steps to its runner (runner.Progress):
// counts only, never a loss or a score.
func stepHeartbeat(ctx context.Context) func(dpsgd.Progress) {
	return func(p dpsgd.Progress) { runner.Progress(ctx, p.Step, p.Steps) }
}

// Check returns an error if the trainer cannot run.
func (t *DPSGDTrainer) Check() error {
	switch {
	case t.Data == nil || t.Data.N == 0:
		return fmt.Errorf("tuning: no training data")
	case t.Val == nil || t.Val.N == 0:
		return fmt.Errorf("tuning: no validation data")
	case !(t.ScoreNoise >= 0) || t.ScoreNoise > noise.MaxDiscreteSigma:
		return fmt.Errorf("tuning: score noise multiplier %v is outside [0, %g]", t.ScoreNoise, noise.MaxDiscreteSigma)
	case !(t.ExpectedBatchSize > 0):
		return fmt.Errorf("tuning: the expected batch size (the nominal qN) must be positive, have %v", t.ExpectedBatchSize)
	case t.ScoreNoise > 0 && t.ValSize < 1:
		return fmt.Errorf("tuning: a private score needs the nominal validation size, have %d", t.ValSize)
	}
	return nil
}
