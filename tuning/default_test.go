package tuning

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
)

// defaultScores is a Trainer whose score is highest at the default
// candidate (index = the space's size) and counts the candidates it
// trains.
type defaultScores struct {
	n       int
	trained map[int]int
}

func (defaultScores) Event() accounting.Event {
	return accounting.Gaussian{NoiseMultiplier: 10, Sensitivity: 1}
}

func (d defaultScores) Train(_ context.Context, c Candidate, _ *uint64) (Run, error) {
	d.trained[c.Index]++
	if c.Index == d.n {
		return Run{Score: 1}, nil
	}
	return Run{Score: 0.5}, nil
}

func defaultSpace() Space {
	return Space{Name: "syn", Dims: []Dim{{Name: LearningRate, Values: []float64{0.1, 1, 10}, Log: true}, {Name: ClipNorm, Values: []float64{0.5, 1}}}}
}

func theDefault(t *testing.T, s Space) *Candidate {
	t.Helper()
	c, err := DefaultCandidate(s, map[string]float64{LearningRate: 4, ClipNorm: 0.1, Momentum: 0.9, BatchSize: 64, Epochs: 2})
	if err != nil {
		t.Fatal(err)
	}
	return &c
}

// Random-stop draws the default at each run with probability w: over K =
// 4000 runs with a fixed seed, the count is within 5 binomial standard
// deviations of Kw, and every other candidate is drawn uniformly.
func TestRandomStopDrawsTheDefaultAtItsWeight(t *testing.T) {
	s := defaultSpace()
	const k, w = 4000, 0.25
	tr := defaultScores{n: s.Size(), trained: map[int]int{}}
	seed := uint64(7)
	res, err := RandomStop(context.Background(), Config{Space: s, Trainer: tr, Repetitions: accounting.FixedRepetitions(k), Seed: &seed,
		Default: theDefault(t, s), DefaultWeight: w})
	if err != nil {
		t.Fatal(err)
	}
	if got, sd := float64(tr.trained[s.Size()]), math.Sqrt(k*w*(1-w)); math.Abs(got-k*w) > 5*sd {
		t.Errorf("the default was drawn %v times of %d, want %v ± %.0f", got, k, k*w, 5*sd)
	}
	each := k * (1 - w) / float64(s.Size())
	for i := range s.Size() {
		if got, sd := float64(tr.trained[i]), math.Sqrt(k*(1-w)/float64(s.Size())); math.Abs(got-each) > 5*sd {
			t.Errorf("candidate %d was drawn %v times, want %.0f ± %.0f", i, got, each, 5*sd)
		}
	}
	if res.Selected == nil || res.Selected.Values[BatchSize] != 64 || res.Selected.Index != s.Size() {
		t.Errorf("selected %+v, want the default (the best score)", res.Selected)
	}
	// The ledger is the same theorem's event as without the default.
	want := SelectionEvent(tr.Event(), accounting.FixedRepetitions(k), nil)
	if len(res.Ledger.Entries) != 1 || !sameEvent(t, res.Ledger.Entries[0].Event, want) {
		t.Errorf("ledger %+v, want one RepeatAndSelect event", res.Ledger)
	}
}

func sameEvent(t *testing.T, a, b accounting.Event) bool {
	t.Helper()
	x, err := accounting.MarshalEvent(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := accounting.MarshalEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(x) == string(y)
}

// Grid trains the default exactly once, after every candidate of the
// space, and counts |S| + 1 runs.
func TestGridTrainsTheDefaultOnce(t *testing.T) {
	s := defaultSpace()
	tr := defaultScores{n: s.Size(), trained: map[int]int{}}
	res, err := Grid(context.Background(), Config{Space: s, Trainer: tr, Default: theDefault(t, s)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Size() + 1 {
		if tr.trained[i] != 1 {
			t.Errorf("candidate %d trained %d times, want once", i, tr.trained[i])
		}
	}
	if len(tr.trained) != s.Size()+1 {
		t.Errorf("trained %d candidates, want %d", len(tr.trained), s.Size()+1)
	}
	if !sameEvent(t, res.Ledger.Entries[0].Event, GridEvent(tr.Event(), s.Size()+1)) {
		t.Errorf("ledger %+v, want %d runs composed", res.Ledger, s.Size()+1)
	}
	spec := Spec{Space: s, Default: theDefault(t, s)}
	if got := (gridTuner{}).Event(tr.Event(), spec); !sameEvent(t, got, GridEvent(tr.Event(), s.Size()+1)) {
		t.Errorf("the grid tuner's planned event %v counts the wrong number of runs", got)
	}
}

// The checks: a default is refused for a tuner that cannot take it, with a
// weight outside (0, 1) for random-stop, with any weight for grid, and
// when it names a setting the DP-SGD trainer does not have or a value its
// dimension cannot take.
func TestDefaultRefused(t *testing.T) {
	s := defaultSpace()
	d := theDefault(t, s)
	rep := accounting.PoissonRepetitions(5)
	for name, err := range map[string]error{
		"gp":              CheckDefault(gpTuner{}, Spec{Space: s, Default: d}),
		"doubling weight": doublingTuner{}.Check(Spec{Space: s, Default: d, DefaultWeight: 0.5, ValSize: 100, TrainN: 500, BatchSize: 50}),
		"weight alone":    CheckDefault(randomStop{}, Spec{Space: s, DefaultWeight: 0.3}),
		"weight 0":        randomStop{}.Check(Spec{Space: s, Repetitions: rep, Default: d}),
		"weight 1":        randomStop{}.Check(Spec{Space: s, Repetitions: rep, Default: d, DefaultWeight: 1}),
		"grid weight":     gridTuner{}.Check(Spec{Space: s, Default: d, DefaultWeight: 0.5}),
		"xiang-o":         randomStop{}.Check(Spec{Space: s, Repetitions: rep, Default: d, DefaultWeight: 0.5, Accountant: XiangO, Validation: "public"}),
		"unknown name":    second(DefaultCandidate(s, map[string]float64{"weight_decay": 1})),
		"categorical":     second(DefaultCandidate(s, map[string]float64{Network: 0})),
		"momentum 1":      second(DefaultCandidate(s, map[string]float64{Momentum: 1})),
		"batch 0.5":       second(DefaultCandidate(s, map[string]float64{BatchSize: 0.5})),
		"learning rate 0": second(DefaultCandidate(s, map[string]float64{LearningRate: 0})),
		"empty":           second(DefaultCandidate(s, nil)),
	} {
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want an error wrapping ErrInvalid", name, err)
		}
	}
	if err := CheckDefault(doublingTuner{}, Spec{Space: s, Default: d}); err != nil {
		t.Errorf("the doubling tuner with the default: %v", err)
	}
	if err := (randomStop{}).Check(Spec{Space: s, Repetitions: rep, Default: d, DefaultWeight: 0.25}); err != nil {
		t.Errorf("random-stop with the default at weight 0.25: %v", err)
	}
	if _, err := GPTune(context.Background(), Config{Space: s, Trainer: defaultScores{trained: map[int]int{}}, Repetitions: rep, Default: d}, DefaultGPOptions()); err == nil {
		t.Error("the GP tuner ran with the default among its candidates")
	}
}

func second(_ Candidate, err error) error { return err }

// The trainer's event covers the default's run: a default whose batch
// size and epochs differ from the tuning's makes every run count as the
// costlier (WorstCase), and Train accepts the default though the space has
// no batch-size dimension.
func TestTrainerEventCoversTheDefault(t *testing.T) {
	s := defaultSpace()
	h := Hyper{NominalN: 1000, Epochs: 1, Config: dpsgd.Config{SamplingRate: 0.032, ExpectedBatchSize: 32, Steps: dpsgd.StepsForEpochs(1, 0.032), LearningRate: 1, ClipNorm: 1}}
	plain, err := h.Event(s, 2)
	if err != nil {
		t.Fatal(err)
	}
	h.Default = theDefault(t, s)
	with, err := h.Event(s, 2)
	if err != nil {
		t.Fatal(err)
	}
	wc, ok := with.(accounting.WorstCase)
	if !ok || len(wc.Events) != 2 || !sameEvent(t, wc.Events[0], plain) {
		t.Fatalf("event with the default %v, want the worst case of the tuning's run and the default's", with)
	}
	arch, cfg, err := h.Run(*h.Default)
	if err != nil {
		t.Fatal(err)
	}
	cfg.NoiseMultiplier = 2
	if !sameEvent(t, wc.Events[1], dpsgd.PlannedEvent(arch, cfg)) || cfg.SamplingRate != 0.064 || cfg.LearningRate != 4 || cfg.Momentum != 0.9 {
		t.Errorf("the default's run %+v, want batch 64 of 1000, η = 4, μ = 0.9", cfg)
	}
	if err := Covers(s, *h.Default); err == nil {
		t.Fatal("the space covers the default's batch size: the test shows nothing")
	}
	if !isDefault(*h.Default, h.Default) {
		t.Error("the default is not recognised as the trainer's default")
	}
}

// The doubling tuner scores the default exactly once on every part, as
// one more candidate (index |S|), its private part runs count |S| + 1
// candidates, and the cache of a search with the default is not one
// without it.
func TestDoublingScoresTheDefaultOnce(t *testing.T) {
	train, val := tinyMNIST(600, 1), tinyMNIST(100, 2)
	parts, err := data.Partition(train, 2, randsrc.Seeded(3, "p"))
	if err != nil {
		t.Fatal(err)
	}
	space := Space{Name: "two", Dims: []Dim{{Name: LearningRate, Values: []float64{0.1, 0.5}}, {Name: ClipNorm, Values: []float64{1}}}}
	d := theDefault(t, space)
	scored := map[int]int{}
	scorer := &PartitionScorer{Arch: model.MNIST, Parts: parts, Val: val, ValSize: 100, Epochs: 1, BatchSize: 64, SamplingRate: 64.0 / 300, Seed: 5,
		Private: true, NoiseMultiplier: 1, Default: d, Runner: runner.Local{}}
	scorer.Task = func(c Candidate, part int) (runner.Task, error) {
		scored[c.Index]++
		if c.Index == space.Size() && !isDefault(c, d) {
			t.Errorf("candidate %d is not the default: %+v", c.Index, c)
		}
		return runner.Task{ID: fmt.Sprint(c.Index, part), Kind: "test"}, nil
	}
	if len(scored) != 0 {
		t.Fatal("scored before the search")
	}
	fpWith := scorer.fingerprint(space)
	scorer.Default = nil
	if scorer.fingerprint(space) == fpWith {
		t.Error("a cache with the default has the same header as one without")
	}
	scorer.Default = d
	// The tasks are made before any runs: the runner then fails them, which
	// is enough to see which candidates were sent.
	scorer.Scores(context.Background(), space)
	for i := range space.Size() + 1 {
		if scored[i] != 2 {
			t.Errorf("candidate %d scored on %d parts, want 2", i, scored[i])
		}
	}
	tuner := &DoublingTuner{Space: space, Scorer: scorer, Search: CappedSearchConfig{Partitions: 2, Epsilon0: 0.5, Granularity: 0.05, MaxIterations: 7}}
	l := tuner.SearchLedger()
	if sc, ok := l.Entries[0].Event.(accounting.SelfComposed); !ok || sc.Count != space.Size()+1 {
		t.Errorf("private part runs counted as %+v, want %d candidates", l.Entries[0].Event, space.Size()+1)
	}
}
