package accounting_test

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/dptune/dptune/privacy/accounting"
)

// zCDP is an accountant added from a test file: zero-concentrated DP (Bun
// & Steinke 2016). A Gaussian of noise multiplier σ is ρ = 1/(2σ²)-zCDP
// (their Proposition 1.6); ρs add under composition (Lemma 1.7); ρ-zCDP
// gives (ρ + 2√(ρ·log(1/δ)), δ)-DP (Proposition 1.3). It counts nothing
// else. An accountant's own file holds what this one does and registers it
// in init.
type zCDP struct{}

func (zCDP) Name() string { return "zcdp" }

func (a zCDP) Epsilon(e accounting.Event, delta float64) (accounting.Guarantee, error) {
	if err := accounting.CheckDelta(delta); err != nil {
		return accounting.Guarantee{}, err
	}
	rho, err := a.rho(e)
	if err != nil {
		return accounting.Guarantee{}, err
	}
	eps := rho + 2*math.Sqrt(rho*math.Log(1/delta))
	return accounting.Guarantee{Epsilon: eps, Delta: delta, Accountant: a.Name()}, nil
}

// rho is e's ρ, or an error wrapping ErrUnsupported naming the event the
// accountant cannot count.
func (a zCDP) rho(e accounting.Event) (float64, error) {
	switch e := e.(type) {
	case accounting.Gaussian:
		return 1 / (2 * e.NoiseMultiplier * e.NoiseMultiplier), nil
	case accounting.SelfComposed:
		r, err := a.rho(e.Event)
		return float64(e.Count) * r, err
	case accounting.Composed:
		sum := 0.0
		for _, ev := range e.Events {
			r, err := a.rho(ev)
			if err != nil {
				return 0, err
			}
			sum += r
		}
		return sum, nil
	}
	return 0, fmt.Errorf("the zcdp accountant cannot count a %q event: %w", e.Type(), accounting.ErrUnsupported)
}

var registerZCDP sync.Once

// An accountant added from a test file: once registered, it is known by
// its name (ByName, and the --accountant flag's help) and counts a ledger
// like the built-in ones; an event it cannot count is an error, never
// ignored. (An accountant's own file registers it in init; this example
// registers it when it runs, after the tests that list the built-in
// accountants.)
func ExampleRegister() {
	registerZCDP.Do(func() {
		accounting.Register(accounting.Named{Name: "zcdp", New: func() accounting.Accountant { return zCDP{} },
			Help: "Gaussian events only", Rank: 10})
	})

	acc, err := accounting.ByName("zcdp", false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(accounting.Help(false))

	var l accounting.Ledger
	l.Add("ten noisy sums", accounting.SelfComposed{Event: accounting.Gaussian{NoiseMultiplier: 4, Sensitivity: 1}, Count: 10})
	z, _ := l.Spent(acc, 1e-5)
	r, _ := l.Spent(accounting.RDP{}, 1e-5)
	fmt.Printf("ε = %.3f by zcdp, %.3f by rdp\n", z.Epsilon, r.Epsilon)

	l.Add("one DP-SGD run", accounting.DPSGD(1.1, 0.01, 100))
	_, err = l.Spent(acc, 1e-5)
	fmt.Println(errors.Is(err, accounting.ErrUnsupported), err)
	// Output:
	// rdp, pld (tightest, slower) or zcdp (Gaussian events only)
	// ε = 4.106 by zcdp, 3.617 by rdp
	// true the zcdp accountant cannot count a "poisson_sampled" event: event not supported by this accountant
}
