package audit

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestOneRunPValueByHand: m = r = v = 2 at ε = 0: P[Bin(2, 1/2) ≥ 2] = 1/4,
// and the δ term's maximum is at i = 1, P[Bin = 1]/1 = 1/2, so p = 1/4 +
// 2·2·δ·1/2.
func TestOneRunPValueByHand(t *testing.T) {
	for _, delta := range []float64{0, 0.01, 0.2} {
		p, err := OneRunPValue(2, 2, 2, 0, delta)
		if err != nil {
			t.Fatal(err)
		}
		if want := 0.25 + 2*delta; math.Abs(p-want) > 1e-12 {
			t.Errorf("δ = %v: p = %v, want %v", delta, p, want)
		}
	}
}

// TestOneRunPValueTail: at δ = 0 the p-value is the binomial tail, here
// summed term by term from log-gamma (an independent computation).
func TestOneRunPValueTail(t *testing.T) {
	for _, c := range []struct {
		r, v int
		eps  float64
	}{{100, 70, 0.5}, {1000, 560, 0.2}, {50, 50, 3}, {400, 150, 1}} {
		q := 1 / (1 + math.Exp(-c.eps))
		var want float64
		for k := c.v; k <= c.r; k++ {
			lr, _ := math.Lgamma(float64(c.r + 1))
			lk, _ := math.Lgamma(float64(k + 1))
			lrk, _ := math.Lgamma(float64(c.r - k + 1))
			want += math.Exp(lr - lk - lrk + float64(k)*math.Log(q) + float64(c.r-k)*math.Log1p(-q))
		}
		got, err := OneRunPValue(c.r, c.r, c.v, c.eps, 0)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-9*math.Max(want, 1e-300)+1e-15 {
			t.Errorf("r = %d, v = %d, ε = %v: p = %v, want %v", c.r, c.v, c.eps, got, want)
		}
	}
}

// TestOneRunEpsilonAllCorrect: with every one of r guesses right and δ =
// 0, p(ε) = q^r, so ε_L = logit((1 − confidence)^(1/r)) in closed form.
func TestOneRunEpsilonAllCorrect(t *testing.T) {
	for _, r := range []int{10, 100, 1000} {
		got, err := OneRunEpsilon(r, r, r, 0, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		q := math.Pow(0.05, 1/float64(r))
		if want := math.Log(q / (1 - q)); math.Abs(got-want) > 1e-5 {
			t.Errorf("r = %d: ε_L = %v, want %v", r, got, want)
		}
	}
	// Half right is what ε = 0 gives: nothing is rejected.
	if got, _ := OneRunEpsilon(1000, 1000, 500, 1e-5, 0.95); got != 0 {
		t.Errorf("500 of 1000 right: ε_L = %v, want 0", got)
	}
	// δ only loosens: ε_L at δ > 0 is at most ε_L at δ = 0.
	a, _ := OneRunEpsilon(1000, 200, 180, 0, 0.95)
	b, _ := OneRunEpsilon(1000, 200, 180, 1e-3, 0.95)
	if !(b <= a && a > 0) {
		t.Errorf("ε_L = %v at δ = 0 and %v at δ = 1e-3", a, b)
	}
}

// TestOneRunRandomizedResponse: guesses right with probability
// e^ε₀/(1+e^ε₀) — ε₀-DP randomized response, the extremal case of the
// theorem — give ε_L ≤ ε₀ in all but about 5% of audits at 95%
// confidence, and come close to ε₀ with 10⁴ guesses.
func TestOneRunRandomizedResponse(t *testing.T) {
	const eps0, m, audits = 1.0, 10000, 300
	q := 1 / (1 + math.Exp(-eps0))
	rng := rand.New(rand.NewPCG(7, 11))
	var over int
	var sum float64
	for range audits {
		v := 0
		for range m {
			if rng.Float64() < q {
				v++
			}
		}
		eps, err := OneRunEpsilon(m, m, v, 0, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if eps > eps0 {
			over++
		}
		sum += eps
	}
	// 5% of 300 is 15; Bin(300, 0.05) exceeds 25 with probability < 0.5%.
	if over > 25 {
		t.Errorf("ε_L > ε₀ in %d of %d audits", over, audits)
	}
	if mean := sum / audits; mean < 0.9 || mean > eps0 {
		t.Errorf("mean ε_L %v, want in [0.9, %v]", mean, eps0)
	}
}

func TestOneRunGuesses(t *testing.T) {
	scores := []float64{5, 1, 4, 2, 3, 0}
	in := []bool{true, false, false, false, true, true}
	// Ranked: 0 (in), 2 (out), 4 (in), 3 (out), 1 (out), 5 (in).
	for _, c := range []struct{ r, v int }{{0, 0}, {2, 1}, {4, 2}, {6, 4}, {1, 0}} {
		v, err := OneRunGuesses(scores, in, c.r)
		if err != nil || v != c.v {
			t.Errorf("r = %d: v = %d (%v), want %d", c.r, v, err, c.v)
		}
	}
	if _, err := OneRunGuesses(scores, in, 7); err == nil {
		t.Error("7 guesses about 6 canaries accepted")
	}
	if _, err := OneRunGuesses(scores, in[:5], 2); err == nil {
		t.Error("mismatched lengths accepted")
	}
	if _, err := OneRunPValue(10, 11, 3, 1, 0); err == nil {
		t.Error("r > m accepted")
	}
	if _, err := OneRunEpsilon(10, 10, 3, 0, 1); err == nil {
		t.Error("confidence 1 accepted")
	}
}

// TestOneRunAuditUnionBound: the best count's ε_L is at the split
// confidence, so it is below what that count alone gives at the full one.
func TestOneRunAuditUnionBound(t *testing.T) {
	const m = 2000
	scores := make([]float64, m)
	in := make([]bool, m)
	rng := rand.New(rand.NewPCG(3, 5))
	for i := range scores {
		in[i] = rng.IntN(2) == 1
		scores[i] = rng.NormFloat64()
		if in[i] {
			scores[i] += 2
		}
	}
	best, each, err := OneRunAudit(scores, in, []int{100, 400, 2000}, 1e-5, 0.95)
	if err != nil || len(each) != 3 {
		t.Fatal(err, each)
	}
	var top float64
	for _, b := range each {
		top = max(top, b.EpsilonLower)
		alone, _ := OneRunEpsilon(m, b.Guesses, b.Correct, 1e-5, 0.95)
		if b.EpsilonLower > alone {
			t.Errorf("r = %d: ε_L %v above its single-count %v", b.Guesses, b.EpsilonLower, alone)
		}
	}
	if best != top || best <= 0 {
		t.Errorf("ε_L %v, counts %+v", best, each)
	}
}
