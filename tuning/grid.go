package tuning

import (
	"context"
	"fmt"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
)

// GridEvent is the cost of grid search over n candidates whose every run is
// base: the n runs composed (the best run's release is post-processing of
// all of them).
func GridEvent(base accounting.Event, n int) accounting.Event {
	return accounting.SelfComposed{Event: base, Count: n}
}

// Grid is the naive baseline: every candidate of the space trained once,
// in order, and the best run's candidate, model and score released. Its
// cost is GridEvent — the composition of all runs, which the accountant
// counts in full, so at a fixed total budget each run gets far more noise
// than random-stop's. cfg.Repetitions is ignored (K is the space's size,
// public). With cfg.Default the default is trained once more, last: K is
// |S| + 1, and the trainer's event covers the default's run.
func Grid(ctx context.Context, cfg Config) (Result, error) {
	n := cfg.candidates()
	cfg.Repetitions = accounting.FixedRepetitions(n)
	var i int
	return run(ctx, cfg, sequence{&i}, GridEvent(cfg.Trainer.Event(), n), gridLabel(n))
}

func gridLabel(n int) string { return fmt.Sprintf("grid search, all %d candidates, best released", n) }

// gridTuner is the "grid" tuner: Grid.
type gridTuner struct{}

// GridName is the grid tuner's name in the registry.
const GridName = "grid"

func (gridTuner) Name() string { return GridName }
func (gridTuner) Summary() string {
	return "the naive baseline: every candidate trained once and the best released; the runs compose, so each gets the noise of the budget split |S| ways"
}
func (gridTuner) Options() []Option { return nil }

// Example tunes over the smallest built-in space: grid trains every
// candidate.
func (gridTuner) Example() string {
	small, n := "", 0
	for _, name := range SpaceNames() {
		if s, _ := BuiltinSpace(name); small == "" || s.Size() < n {
			small, n = name, s.Size()
		}
	}
	return "--space " + small + " --epochs 1 --epsilon 8"
}
func (gridTuner) Uses() Uses { return Uses{TrainerScores: true, Diagnostics: true, Default: true} }

// Check refuses any option (it has none; CheckOptions), a space too large
// to count K = |S| (|S| + 1 with the default), a weight on the default
// (grid trains it once) and any accountant but rdp.
func (g gridTuner) Check(s Spec) error {
	if err := CheckOptions(g, s); err != nil {
		return err
	}
	if err := accounting.FixedRepetitions(s.Candidates()).Check(); err != nil {
		return invalid(err)
	}
	if s.DefaultWeight != 0 {
		return invalidf("the grid tuner trains the default once: it takes no weight on it")
	}
	return checkRDPOnly(s)
}

func (gridTuner) Accountant(Spec) accounting.Accountant { return accounting.RDP{} }
func (gridTuner) Event(base accounting.Event, s Spec) accounting.Event {
	return GridEvent(base, s.Candidates())
}
func (gridTuner) Label(s Spec) string { return gridLabel(s.Candidates()) }
func (gridTuner) Run(ctx context.Context, s Spec, t Trainer, r runner.Runner) (Result, error) {
	return Grid(ctx, s.config(t, r))
}
