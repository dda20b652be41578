package tuning

import (
	"math"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
)

// DrawRuns' frequencies match the pmf (a χ² statistic over the first 30
// values and the tail) and its sample mean the closed-form mean.
func TestDrawRunsMatchesPMF(t *testing.T) {
	rng := randsrc.Seeded(7, "test")
	reps := []accounting.Repetitions{
		accounting.TNBRepetitions(1, 0.1), accounting.TNBRepetitions(0, 0.05),
		accounting.TNBRepetitions(-0.5, 0.05), accounting.TNBRepetitions(3, 0.2),
		accounting.PoissonRepetitions(10),
	}
	const n = 40000
	for _, rep := range reps {
		counts := make([]float64, 31)
		var sum, sum2 float64
		for range n {
			k, err := DrawRuns(rep, rng)
			if err != nil {
				t.Fatal(err)
			}
			sum += float64(k)
			sum2 += float64(k) * float64(k)
			counts[min(k, 30)]++
		}
		mean := sum / n
		sd := math.Sqrt(sum2/n - mean*mean)
		if math.Abs(mean-rep.Mean()) > 5*sd/math.Sqrt(n) {
			t.Errorf("%s: sample mean %v, mean %v", rep, mean, rep.Mean())
		}
		var chi2 float64
		var tail float64 = 1
		cells := 0
		for k := 0; k < 30; k++ {
			p := rep.PMF(k)
			tail -= p
			if p*n < 5 {
				counts[30] += counts[k] // pool sparse cells into the tail
				tail += p
				continue
			}
			chi2 += (counts[k] - n*p) * (counts[k] - n*p) / (n * p)
			cells++
		}
		if tail*n >= 5 {
			chi2 += (counts[30] - n*tail) * (counts[30] - n*tail) / (n * tail)
			cells++
		}
		// χ² with ≤ 30 degrees of freedom: 99.99th percentile < 70.
		if chi2 > 70 {
			t.Errorf("%s: χ² = %.1f over %d cells", rep, chi2, cells)
		}
	}
	if _, err := DrawRuns(accounting.TNBRepetitions(1, 2), rng); err == nil {
		t.Error("γ = 2 accepted")
	}
}

// A TNB expecting a billion runs used to be drawn (walking its pmf up to
// 2³⁰ and then truncating K silently); DrawRuns refuses it before drawing,
// as it refuses a Poisson mean above the same cap.
func TestDrawRunsRefusesHugeMeans(t *testing.T) {
	rng := randsrc.Seeded(1, "test")
	for _, r := range []accounting.Repetitions{accounting.TNBRepetitions(1, 1e-9), accounting.TNBRepetitions(0, 1e-15), accounting.PoissonRepetitions(accounting.MaxMeanRuns + 1)} {
		if k, err := DrawRuns(r, rng); err == nil {
			t.Errorf("%v: drew K = %d, want an error", r, k)
		}
	}
}
