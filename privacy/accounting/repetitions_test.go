package accounting

import (
	"math"
	"testing"
)

// The TNB pmf sums to 1 and its mean is DP-HyPO's closed form (Definition
// B.1); η = 1 is the geometric distribution γ(1−γ)^{k−1}.
func TestRepetitionsPMFAndMean(t *testing.T) {
	for _, r := range []Repetitions{
		TNBRepetitions(1, 0.1), TNBRepetitions(0, 0.05), TNBRepetitions(-0.5, 0.02),
		TNBRepetitions(2, 0.2), TNBRepetitions(0.5, 0.01), PoissonRepetitions(10),
	} {
		var sum, mean float64
		for k := 0; k < 20000; k++ {
			p := r.PMF(k)
			sum += p
			mean += float64(k) * p
		}
		near(t, r.String()+" total mass", sum, 1, 1e-9)
		near(t, r.String()+" mean", mean, r.Mean(), 1e-7*r.Mean())
	}
	g := TNBRepetitions(1, 0.1)
	for k := 1; k < 5; k++ {
		near(t, "geometric pmf", g.PMF(k), 0.1*math.Pow(0.9, float64(k-1)), 1e-15)
	}
}

func TestTNBWithMean(t *testing.T) {
	for _, eta := range []float64{-0.9, -0.5, 0, 0.5, 1, 3} {
		for _, m := range []float64{1.5, 10, 1000} {
			r, err := TNBWithMean(eta, m)
			if err != nil {
				t.Fatal(err)
			}
			near(t, r.String()+" mean", r.Mean(), m, 1e-9*m)
		}
	}
	near(t, "geometric γ for mean 10", mustTNB(t, 1, 10).Gamma, 0.1, 1e-12)
	for _, c := range []struct{ eta, mean float64 }{{-1, 10}, {1, 1}, {1, 0.5}, {math.NaN(), 10}} {
		if _, err := TNBWithMean(c.eta, c.mean); err == nil {
			t.Errorf("η=%v mean=%v accepted", c.eta, c.mean)
		}
	}
	for _, r := range []Repetitions{TNBRepetitions(1, 0), TNBRepetitions(1, 1), TNBRepetitions(-1, 0.5), PoissonRepetitions(0), PoissonRepetitions(0.5), {Distribution: "uniform"}} {
		if r.Check() == nil {
			t.Errorf("%+v accepted", r)
		}
	}
}

func mustTNB(t *testing.T, eta, mean float64) Repetitions {
	t.Helper()
	r, err := TNBWithMean(eta, mean)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
