package accounting

import (
	"errors"
	"math"
	"testing"
)

// Basic composition adds ε and δ (Dwork & Roth 2014, Theorem 3.16); Poisson
// subsampling amplifies to log(1 + q(e^ε − 1)) and qδ (Balle, Barthe,
// Gaboardi 2018, Theorem 8).
func TestBasicComposition(t *testing.T) {
	ev := Composed{Events: []Event{
		Laplace{Scale: 2, Sensitivity: 1},
		EpsilonDelta{Epsilon: 0.3, Delta: 1e-7},
		AboveThreshold{Epsilon: 0.1, MaxIterations: 30},
		SelfComposed{Event: PoissonSampled{SamplingRate: 0.1, Event: EpsilonDelta{Epsilon: 1, Delta: 1e-6}}, Count: 3},
	}}
	g, err := Basic{}.Epsilon(ev, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "ε", g.Epsilon, 0.5+0.3+3+3*math.Log1p(0.1*(math.E-1)), 1e-12)
	if _, err := (Basic{}).Epsilon(ev, 1e-7); err == nil {
		t.Error("δ = 4e-7 spent but a 1e-7 target accepted")
	}
	if _, err := (Basic{}).Epsilon(DPSGD(1, 0.01, 10), 1e-5); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Gaussian: %v", err)
	}
	// DP-HyPO Theorem 2: (2+η)(ε + log(C/c)).
	a, err := Basic{}.Epsilon(AdaptiveRepeatAndSelect{Event: Laplace{Scale: 1, Sensitivity: 1}, Repetitions: TNBRepetitions(0, 0.1), MaxRatio: 2, MinRatio: 0.75}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	near(t, "DP-HyPO pure", a.Epsilon, 2*(1+math.Log(2/0.75)), 1e-12)
}
