package tuning

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
)

// Config is what every tuner takes.
type Config struct {
	Space       Space
	Trainer     Trainer
	Repetitions accounting.Repetitions // distribution of the number of runs K
	// Seed, if not nil, makes K, the candidates and every run reproducible;
	// without it they come from crypto/rand.
	Seed *uint64
	// Key, if not nil, is a durable runner's secret 256-bit invocation key
	// (with a Runner only): K and the candidates come from its stream
	// "tuning", and run j's job gets the subkey Key.Derive("run j") instead
	// of a seed. It takes precedence over Seed.
	Key *randsrc.Key
	// Progress, if not nil, is called as each run starts (run = 1, …,
	// runs), or, with a Runner, as each run finishes (run = runs finished).
	// It is the curator's: it shows the number of runs K, which the release
	// must not.
	Progress func(run, runs int)
	// Runner, if not nil, runs the training runs as jobs that Jobs
	// describes: random-stop's K runs all at once (its candidates do not
	// depend on the scores), DP-HyPO's one after another (each draw needs
	// the scores before it). Nil: Trainer.Train in this process, one run
	// after another.
	Runner runner.Runner
	Jobs   Jobs
	// Diagnostics asks for every run's candidate and score in
	// Result.Diagnostics. NOT PRIVATE: they reveal K and the other runs'
	// scores, which the guarantee needs hidden; for the data curator only.
	Diagnostics bool
	// Default, if not nil, is one more candidate beside the space's grid,
	// at index Space.Size(): the published default settings
	// (DefaultCandidate), for a tuner whose Uses.Default is true. Grid
	// trains it once more; random-stop draws it with probability
	// DefaultWeight at each run. The Trainer's Event must count its run
	// (DPSGDTrainer.Default).
	Default *Candidate
	// DefaultWeight is random-stop's prior weight w ∈ (0, 1) on Default.
	DefaultWeight float64
}

// candidates is the number of candidates: the space's, and Default.
func (cfg Config) candidates() int {
	if cfg.Default != nil {
		return cfg.Space.Size() + 1
	}
	return cfg.Space.Size()
}

// at is candidate i: the space's, or Default at index Space.Size().
func (cfg Config) at(i int) Candidate {
	if cfg.Default != nil && i == cfg.Space.Size() {
		c := *cfg.Default
		c.Index = i
		return c
	}
	return cfg.Space.At(i)
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

// Jobs describes a Trainer's runs as runner jobs. Task's input must fix
// all the run's randomness (its seed), so that a retried job repeats the
// same run.
type Jobs interface {
	// Task is the job of training candidate c with seed, or with the
	// run's secret key when key is not nil (both nil only for a runner in
	// this process: a fresh crypto/rand stream).
	Task(id string, c Candidate, seed *uint64, key *randsrc.Key) (runner.Task, error)
	// Decode reads the output of a finished job that trained c.
	Decode(c Candidate, output []byte) (Run, error)
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
	if cfg.Key != nil && cfg.Runner == nil {
		return Result{}, fmt.Errorf("tuning: a keyed tuning needs a runner")
	}
	rng := randsrc.For(cfg.Seed, cfg.Key, "tuning")
	k, err := DrawRuns(cfg.Repetitions, rng)
	if err != nil {
		return Result{}, err
	}
	l := &loop{cfg: cfg, s: s, rng: rng, best: -1}
	// The budget is spent whatever happens next (an interrupted tuner has
	// already released nothing, but its runs touched the data).
	l.res.Ledger.Add(label, event)
	if cfg.Runner != nil {
		err = l.viaRunner(ctx, k)
	} else {
		err = l.inProcess(ctx, k)
	}
	return l.res, err
}

// loop is one tuning's K runs: its sampler, its draws and the best run so
// far.
type loop struct {
	cfg  Config
	s    sampler
	rng  *rand.Rand
	res  Result
	best float64
}

// record learns run r of candidate i and keeps it if it is the best.
func (l *loop) record(i int, r Run) {
	c := l.cfg.at(i)
	if l.cfg.Diagnostics {
		rec := RunRecord{Candidate: c, Score: r.Score, Failed: r.Failed}
		if rec.Failed {
			rec.Score = 0 // −∞ has no JSON
		}
		l.res.Diagnostics = append(l.res.Diagnostics, rec)
	}
	if r.Failed {
		// The sampler learns the worst score; the run is never selected.
		l.s.observe(i, 0)
		return
	}
	l.s.observe(i, r.Score)
	if l.res.Selected == nil || r.Score > l.best {
		l.best = r.Score
		l.res.Selected, l.res.Model, l.res.Score, l.res.NoisyCount = &c, r.Model, r.Score, r.NoisyCount
	}
}

// seedOf is run j's seed: nil unless the tuning is seeded without a key.
func (l *loop) seedOf(j int) *uint64 {
	if l.cfg.Seed == nil || l.cfg.Key != nil {
		return nil
	}
	v := *l.cfg.Seed ^ (uint64(j) * 0x9e3779b97f4a7c15)
	return &v
}

// keyOf is run j's subkey of a keyed tuning, else nil.
func (l *loop) keyOf(j int) *randsrc.Key {
	if l.cfg.Key == nil {
		return nil
	}
	return l.cfg.Key.Derive(fmt.Sprintf("run %d", j))
}

// viaRunner runs the k runs as the runner's jobs: a non-adaptive sampler's
// candidates are all drawn up front and the k runs go out at once; an
// adaptive one's one at a time, each waiting for the scores before it.
func (l *loop) viaRunner(ctx context.Context, k int) error {
	cfg := l.cfg
	if cfg.Jobs == nil {
		return fmt.Errorf("tuning: a runner needs the trainer's jobs")
	}
	batch := 1
	if _, ok := l.s.(nonAdaptive); ok {
		batch = max(k, 1)
	}
	finished := 0
	for j0 := 1; j0 <= k; j0 += batch {
		n := min(batch, k-j0+1)
		idx := make([]int, n)
		tasks := make([]runner.Task, n)
		for t := range n {
			idx[t] = l.s.next(l.rng)
			task, err := cfg.Jobs.Task(fmt.Sprintf("run %d", j0+t), cfg.at(idx[t]), l.seedOf(j0+t), l.keyOf(j0+t))
			if err != nil {
				return err
			}
			tasks[t] = task
		}
		runs := make([]Run, n)
		err := cfg.Runner.Run(ctx, tasks, func(t int, out []byte) error {
			r, err := cfg.Jobs.Decode(cfg.at(idx[t]), out)
			if err != nil {
				return fmt.Errorf("tuning: %s: %w", tasks[t].ID, err)
			}
			runs[t] = r
			finished++
			if cfg.Progress != nil {
				cfg.Progress(finished, k)
			}
			return nil
		})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("tuning: a training run failed: %w", err)
		}
		// Selection goes in run order, as in one process.
		for t := range n {
			l.record(idx[t], runs[t])
		}
	}
	return nil
}

// inProcess runs the k runs one after another with the Trainer.
func (l *loop) inProcess(ctx context.Context, k int) error {
	for j := 1; j <= k; j++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if l.cfg.Progress != nil {
			l.cfg.Progress(j, k)
		}
		i := l.s.next(l.rng)
		r, err := l.cfg.Trainer.Train(ctx, l.cfg.at(i), l.seedOf(j))
		if err != nil {
			return fmt.Errorf("tuning: a training run failed: %w", err)
		}
		l.record(i, r)
	}
	return nil
}

// nonAdaptive is a sampler whose candidates do not depend on the scores.
type nonAdaptive interface{ nonAdaptive() }

type uniform struct{ n int }

func (u uniform) next(rng *rand.Rand) int { return rng.IntN(u.n) }
func (uniform) observe(int, float64)      {}
func (uniform) nonAdaptive()              {}

// weighted draws the default candidate (index n) with probability w and
// otherwise a candidate of the space uniformly: a fixed distribution that
// depends on no score and no data.
type weighted struct {
	n int
	w float64
}

func (u weighted) next(rng *rand.Rand) int {
	if rng.Float64() < u.w {
		return u.n
	}
	return rng.IntN(u.n)
}
func (weighted) observe(int, float64) {}
func (weighted) nonAdaptive()         {}

// sequence visits candidates 0, 1, …, in order: grid search.
type sequence struct{ i *int }

func (s sequence) next(*rand.Rand) int {
	i := *s.i
	*s.i++
	return i
}
func (sequence) observe(int, float64) {}
func (sequence) nonAdaptive()         {}
