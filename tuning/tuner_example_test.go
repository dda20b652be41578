package tuning_test

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// first is a tuner added from a test file: one run of the space's first
// candidate, released. It owns its privacy plan: its whole tuning's event
// is the base run's own. A tuner's own file holds what this one does and
// registers it in init.
type first struct{}

func (first) Name() string                                             { return "first" }
func (first) Summary() string                                          { return "one run of the first candidate" }
func (first) Options() []tuning.Option                                 { return nil }
func (first) Uses() tuning.Uses                                        { return tuning.Uses{TrainerScores: true} }
func (f first) Check(s tuning.Spec) error                              { return tuning.CheckOptions(f, s) }
func (first) Accountant(tuning.Spec) accounting.Accountant             { return accounting.RDP{} }
func (first) Event(b accounting.Event, _ tuning.Spec) accounting.Event { return b }
func (first) Label(tuning.Spec) string                                 { return "the first candidate, one run" }

// Run trains the first candidate and releases it; the ledger is charged
// before the run touches data.
func (f first) Run(ctx context.Context, s tuning.Spec, t tuning.Trainer, _ runner.Runner) (tuning.Result, error) {
	var res tuning.Result
	res.Ledger.Add(f.Label(s), f.Event(t.Event(), s))
	c := s.Space.At(0)
	r, err := t.Train(ctx, c, s.Seed)
	if err != nil {
		return res, err
	}
	res.Selected, res.Model, res.Score = &c, r.Model, r.Score
	return res, nil
}

// scoreByRate is a Trainer that trains nothing: a run's score is its
// learning rate, and its event is DP-SGD's at the noise multiplier sigma.
type scoreByRate struct{ sigma float64 }

func (t scoreByRate) Event() accounting.Event { return accounting.DPSGD(t.sigma, 256.0/60000, 2350) }
func (t scoreByRate) Train(_ context.Context, c tuning.Candidate, _ *uint64) (tuning.Run, error) {
	return tuning.Run{Score: c.Values[tuning.LearningRate]}, nil
}

var registerFirst sync.Once

// A tuner added from a test file: once registered, it is known by its
// name, and a caller runs it as it runs the built-in ones — checks the
// spec, calibrates the base run's noise so that the tuner's own event
// meets the budget (the one calibration of every tuner), runs it, and
// releases its selection under its ledger. (A tuner's own file registers
// it in init; this example registers it when it runs, after the tests that
// list the built-in tuners.)
func ExampleRegister() {
	registerFirst.Do(func() { tuning.Register(first{}) })
	fmt.Println(slices.Contains(tuning.Names(), "first"))

	ctx := context.Background()
	tu, err := tuning.Lookup("first")
	if err != nil {
		fmt.Println(err)
		return
	}
	spec := tuning.Spec{Space: tuning.Space{Name: "rates", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.5, 2}}}}}
	if err := tu.Check(spec); err != nil {
		fmt.Println(err)
		return
	}
	base := func(sigma float64) accounting.Event { return scoreByRate{sigma}.Event() }
	sigma, err := tuning.Calibrate(ctx, tu, spec, base, 3, 1e-5)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := tu.(tuning.Runner).Run(ctx, spec, scoreByRate{sigma}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	g, _ := res.Ledger.Spent(tu.Accountant(spec), 1e-5)
	fmt.Printf("σ = %.4f; selected learning rate %g (score %g)\n", sigma, res.Selected.Values[tuning.LearningRate], res.Score)
	fmt.Printf("ledger: %s, ε = %.3f\n", res.Ledger.Entries[0].Label, g.Epsilon)

	err = tu.Check(tuning.Spec{Space: spec.Space, Options: tuning.Values{"rounds": 2}})
	fmt.Println(err)
	// Output:
	// true
	// σ = 0.7422; selected learning rate 0.5 (score 0.5)
	// ledger: the first candidate, one run, ε = 3.000
	// the first tuner takes no options, not "rounds"
}
