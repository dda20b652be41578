package tuning

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/dptune/dptune/dpsgd/accounting"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// Config is what every tuner takes.
type Config struct {
	Space       Space
	Trainer     Trainer
	Repetitions accounting.Repetitions // distribution of the number of runs K
	// Seed, if not nil, makes K, the candidates and every run reproducible;
	// without it they come from crypto/rand.
	Seed *uint64
	// Progress, if not nil, is called as each run starts (run = 1, …, runs).
	// It is the curator's: it shows the number of runs K, which the release
	// must not.
	Progress func(run, runs int)
	// Diagnostics asks for every run's candidate and score in
	// Result.Diagnostics. NOT PRIVATE: they reveal K and the other runs'
	// scores, which the guarantee needs hidden; for the data curator only.
	Diagnostics bool
}

// Result is all that a tuner releases, plus the curator's diagnostics when
// asked for.
type Result struct {
	// Selected is the best run's candidate; nil when K = 0 (Poisson) or
	// every run failed, in which case nothing but the ledger is released.
	Selected *Candidate
	Model    *model.Net
	Score    float64 // the selected run's score (noisy when validation is private)
	// NoisyCount is the selected run's released integer when the score is
	// private (Score = NoisyCount / nominal validation size).
	NoisyCount int64
	Ledger     accounting.Ledger
	// Diagnostics: every run, in order. Not private; nil unless asked for.
	Diagnostics []RunRecord
}

// RunRecord is one run, for the curator's diagnostics.
type RunRecord struct {
	Candidate Candidate `json:"candidate"`
	Score     float64   `json:"score"`
	Failed    bool      `json:"failed,omitempty"` // diverged: no model, never selected
}

// sampler proposes each run's candidate and learns from its score.
type sampler interface {
	next(rng *rand.Rand) int
	observe(i int, score float64)
}

// run is the shared loop of Framework 1 (DP-HyPO) — Algorithm 2 of Xiang et
// al. when the sampler is uniform: draw K, run K candidates, keep the best.
func run(ctx context.Context, cfg Config, s sampler, event accounting.Event, label string) (Result, error) {
	if err := cfg.Space.Check(); err != nil {
		return Result{}, err
	}
	rng := randsrc.New(cfg.Seed, "tuning")
	k, err := DrawRuns(cfg.Repetitions, rng)
	if err != nil {
		return Result{}, err
	}
	var res Result
	// The budget is spent whatever happens next (an interrupted tuner has
	// already released nothing, but its runs touched the data).
	res.Ledger.Add(label, event)
	best := -1.0
	for j := 1; j <= k; j++ {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if cfg.Progress != nil {
			cfg.Progress(j, k)
		}
		i := s.next(rng)
		c := cfg.Space.At(i)
		var seed *uint64
		if cfg.Seed != nil {
			v := *cfg.Seed ^ (uint64(j) * 0x9e3779b97f4a7c15)
			seed = &v
		}
		r, err := cfg.Trainer.Train(ctx, c, seed)
		if err != nil {
			return res, fmt.Errorf("tuning: a training run failed: %w", err)
		}
		if cfg.Diagnostics {
			rec := RunRecord{Candidate: c, Score: r.Score, Failed: r.Failed}
			if rec.Failed {
				rec.Score = 0 // −∞ has no JSON
			}
			res.Diagnostics = append(res.Diagnostics, rec)
		}
		if r.Failed {
			// The sampler learns the worst score; the run is never selected.
			s.observe(i, 0)
			continue
		}
		s.observe(i, r.Score)
		if res.Selected == nil || r.Score > best {
			best = r.Score
			cc := c
			res.Selected, res.Model, res.Score, res.NoisyCount = &cc, r.Model, r.Score, r.NoisyCount
		}
	}
	return res, nil
}

type uniform struct{ n int }

func (u uniform) next(rng *rand.Rand) int { return rng.IntN(u.n) }
func (uniform) observe(int, float64)      {}

// RandomStop is random-stop tuning (Liu & Talwar 2019; Papernot & Steinke
// 2022; Algorithm 2 of Xiang et al., "Selection leaks privacy"): K ∼
// cfg.Repetitions runs, each on a candidate drawn uniformly from the space,
// and the best run's candidate, model and score are released. Its cost is
// accounting.RepeatAndSelect of the trainer's event (Papernot & Steinke,
// Theorems 2 and 6).
func RandomStop(ctx context.Context, cfg Config) (Result, error) {
	ev := accounting.RepeatAndSelect{Event: cfg.Trainer.Event(), Repetitions: cfg.Repetitions}
	return run(ctx, cfg, uniform{cfg.Space.Size()}, ev, "random-stop tuning, "+cfg.Repetitions.String()+" runs, best released")
}
