package noise

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func TestSecureNormalMoments(t *testing.T) {
	const n = 200_000
	rng := testRand("secure normal")
	x := make([]float64, n)
	var sum, sum2 float64
	for i := range x {
		x[i] = SecureNormal(rng)
		sum += x[i]
		sum2 += x[i] * x[i]
	}
	// For N(0, 1): the sample mean has standard error 1/√n, and the mean of
	// x² has variance (E[x⁴] − 1)/n = 2/n.
	mean, second := sum/n, sum2/n
	if tol := 5 / math.Sqrt(n); math.Abs(mean) > tol {
		t.Errorf("mean %v, want 0 ± %v", mean, tol)
	}
	if tol := 5 * math.Sqrt(2.0/n); math.Abs(second-1) > tol {
		t.Errorf("variance %v, want 1 ± %v", second, tol)
	}

	// Kolmogorov–Smirnov against Φ(x) = erfc(−x/√2)/2. The asymptotic
	// upper 10⁻³ critical value of √n·D is 1.9495.
	slices.Sort(x)
	var d float64
	for i, v := range x {
		phi := 0.5 * math.Erfc(-v/math.Sqrt2)
		d = max(d, math.Abs(float64(i+1)/n-phi), math.Abs(phi-float64(i)/n))
	}
	crit := 1.9495 / math.Sqrt(n)
	t.Logf("KS D = %.5f (critical %.5f)", d, crit)
	if d > crit {
		t.Errorf("KS statistic %v exceeds %v", d, crit)
	}
}

func TestAddGaussian(t *testing.T) {
	for _, secure := range []bool{false, true} {
		dst := []float32{1, -2.5, 0, 3e-8}
		want := slices.Clone(dst)
		rng, twin := testRand("add gaussian"), testRand("add gaussian")
		AddGaussian(dst, 0, secure, rng)
		if !slices.Equal(dst, want) {
			t.Errorf("secure=%v: std 0 changed %v to %v", secure, want, dst)
		}
		if rng.Uint64() != twin.Uint64() {
			t.Errorf("secure=%v: std 0 consumed randomness", secure)
		}

		// With std > 0 each element gets std·z, summed in float64 and
		// rounded once, z drawn as documented.
		const std = 0.75
		AddGaussian(dst, std, secure, rng)
		for k, v := range want {
			z := twin.NormFloat64()
			if secure {
				z = (z + twin.NormFloat64() + twin.NormFloat64() + twin.NormFloat64()) / 2
			}
			if w := float32(float64(v) + std*z); dst[k] != w {
				t.Errorf("secure=%v: element %d = %v, want %v", secure, k, dst[k], w)
			}
		}
	}
}

func TestAddGaussianNoAlloc(t *testing.T) {
	dst := make([]float32, 1000)
	rng := testRand("alloc")
	for _, secure := range []bool{false, true} {
		if a := testing.AllocsPerRun(10, func() { AddGaussian(dst, 1, secure, rng) }); a != 0 {
			t.Errorf("secure=%v: %v allocations per call", secure, a)
		}
	}
}

// BenchmarkAddGaussian times the DP-SGD noise step at 26,010 elements (the
// MNIST network's parameter count) and 550,570 (the large end of the models
// it is run on).
func BenchmarkAddGaussian(b *testing.B) {
	for _, n := range []int{26_010, 550_570} {
		for _, secure := range []bool{true, false} {
			name := "fast"
			if secure {
				name = "secure"
			}
			b.Run(fmt.Sprintf("%s/n=%d", name, n), func(b *testing.B) {
				dst := make([]float32, n)
				rng := testRand("bench")
				b.SetBytes(int64(4 * n))
				for b.Loop() {
					AddGaussian(dst, 1, secure, rng)
				}
			})
		}
	}
}
