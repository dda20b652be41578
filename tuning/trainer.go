package tuning

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/dpsgd/accounting"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// Run is what one training run of a candidate gives the tuner.
type Run struct {
	Model *model.Net
	Score float64 // higher is better; released only for the selected run
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
// learning rate and clipping norm (dimensions LearningRate and ClipNorm; a
// missing one takes the fixed value here) and a noise multiplier fixed by
// the budget; the score is accuracy on Val.
//
// Val is either declared public by the user (ScoreNoise = 0: no privacy
// cost, and the ledger says so) or private, in which case the score is
// released with Gaussian noise of standard deviation ScoreNoise/|Val| — the
// Gaussian mechanism on accuracy, whose sensitivity to one example is
// 1/|Val| — and that mechanism joins the run's event.
type DPSGDTrainer struct {
	Arch            model.Arch
	Data            *data.Dataset // training data (private)
	Val             *data.Dataset
	NoiseMultiplier float64
	SamplingRate    float64
	Steps           int
	Momentum        float64
	LearningRate    float64 // used when the space has no LearningRate dimension
	ClipNorm        float64 // used when the space has no ClipNorm dimension
	ScoreNoise      float64 // 0: Val is public
}

// EventFor is the event of one run with noise multiplier sigma: the DP-SGD
// steps, plus the noisy score when Val is private.
func (t *DPSGDTrainer) EventFor(sigma float64) accounting.Event {
	e := accounting.DPSGD(sigma, t.SamplingRate, t.Steps)
	if t.ScoreNoise > 0 {
		n := float64(t.Val.N)
		return accounting.Composed{Events: []accounting.Event{e,
			accounting.Gaussian{NoiseMultiplier: t.ScoreNoise / n, Sensitivity: 1 / n}}}
	}
	return e
}

// Event implements Trainer.
func (t *DPSGDTrainer) Event() accounting.Event { return t.EventFor(t.NoiseMultiplier) }

// Train implements Trainer.
func (t *DPSGDTrainer) Train(ctx context.Context, c Candidate, seed *uint64) (Run, error) {
	lr, clip := t.LearningRate, t.ClipNorm
	if v, ok := c.Values[LearningRate]; ok {
		lr = v
	}
	if v, ok := c.Values[ClipNorm]; ok {
		clip = v
	}
	net, err := model.New(t.Arch, randsrc.New(seed, "init"))
	if err != nil {
		return Run{}, err
	}
	cfg := dpsgd.Config{NoiseMultiplier: t.NoiseMultiplier, ClipNorm: clip, SamplingRate: t.SamplingRate,
		Steps: t.Steps, LearningRate: lr, Momentum: t.Momentum, Seed: seed}
	if _, err := dpsgd.Train(ctx, net, t.Data, cfg, nil, nil); err != nil {
		if !errors.Is(err, dpsgd.ErrDiverged) {
			return Run{}, err
		}
		// A diverged run is a bad candidate, not a failure of the tuner: it
		// scores 0 (chance is 1/classes; 0 keeps it from being selected).
		return Run{Model: net, Score: t.noisy(0, seed)}, nil
	}
	m, err := dpsgd.Evaluate(ctx, net, t.Val.X, t.Val.Y)
	if err != nil {
		return Run{}, err
	}
	return Run{Model: net, Score: t.noisy(m.Accuracy, seed)}, nil
}

// noisy adds the private score's noise.
func (t *DPSGDTrainer) noisy(acc float64, seed *uint64) float64 {
	if t.ScoreNoise == 0 {
		return acc
	}
	var rng *rand.Rand = randsrc.New(seed, "score")
	return acc + t.ScoreNoise/float64(t.Val.N)*rng.NormFloat64()
}

// Check returns an error if the trainer cannot run.
func (t *DPSGDTrainer) Check() error {
	switch {
	case t.Data == nil || t.Data.N == 0:
		return fmt.Errorf("tuning: no training data")
	case t.Val == nil || t.Val.N == 0:
		return fmt.Errorf("tuning: no validation data")
	case !(t.ScoreNoise >= 0) || math.IsInf(t.ScoreNoise, 1):
		return fmt.Errorf("tuning: score noise %v", t.ScoreNoise)
	}
	return nil
}
