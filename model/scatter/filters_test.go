package scatter

import (
	"math"
	"testing"
)

// gaussHat is the closed-form Fourier transform of kymatio's normalised
// Gabor envelope, exp(−uᵀCu)/(2·3.1415·σ²/slant) with
// C = R diag(1, slant²) Rᵀ/(2σ²): (π/3.1415)·exp(−σ²/2 · vᵀ R diag(1, 1/slant²) Rᵀ v).
func gaussHat(v0, v1, sigma, theta, slant float64) float64 {
	const kymatioPi = 3.1415 // kymatio's gabor_2d normalisation
	c, s := math.Cos(theta), math.Sin(theta)
	a := c*v0 + s*v1  // along θ
	b := -s*v0 + c*v1 // across θ
	return math.Pi / kymatioPi * math.Exp(-sigma*sigma/2*(a*a+b*b/(slant*slant)))
}

// periodicHat sums gaussHat over the aliases ω + 2πm, |m₁|, |m₂| ≤ 3 (the
// DFT of the sampled, periodised filter by Poisson's summation formula),
// centred at ξ(cos θ, sin θ).
func periodicHat(w0, w1, sigma, theta, xi, slant float64) float64 {
	var sum float64
	for m0 := -3; m0 <= 3; m0++ {
		for m1 := -3; m1 <= 3; m1++ {
			v0 := w0 + 2*math.Pi*float64(m0) - xi*math.Cos(theta)
			v1 := w1 + 2*math.Pi*float64(m1) - xi*math.Sin(theta)
			sum += gaussHat(v0, v1, sigma, theta, slant)
		}
	}
	return sum
}

// TestFilterBankClosedForm checks the stored Fourier filters at full
// resolution against their closed forms, derived independently of the
// spatial construction: the low-pass φ̂(ω) = Σ_m G_σ(ω + 2πm) with
// σ = 0.8·2^(J−1), and the Morlet ψ̂(ω) = Σ_m [G(ω + 2πm − ξe_θ) − K·G(ω + 2πm)]
// with σ = 0.8·2^j, ξ = 3π/(4·2^j), θ = (⌊L − L/2 − 1⌋ − t)π/L,
// slant 4/L and K making ψ̂(0) = 0. This pins down kymatio's scale, centre
// frequency, orientation and slant conventions.
func TestFilterBankClosedForm(t *testing.T) {
	for _, c := range []struct{ h, w, J, L int }{{28, 28, 2, 8}, {32, 24, 3, 6}, {16, 16, 1, 5}} {
		s, err := New(c.h, c.w, c.J, c.L)
		if err != nil {
			t.Fatal(err)
		}
		M, N := s.mp, s.np
		freq := func(r, c int) (float64, float64) {
			return 2 * math.Pi * float64(r) / float64(M), 2 * math.Pi * float64(c) / float64(N)
		}
		worst := 0.0
		sigma := 0.8 * math.Pow(2, float64(c.J-1))
		for r := 0; r < M; r++ {
			for col := 0; col < N; col++ {
				w0, w1 := freq(r, col)
				want := periodicHat(w0, w1, sigma, 0, 0, 1)
				worst = math.Max(worst, math.Abs(s.fb.phi[0][r*N+col]-want))
			}
		}
		if worst > 1e-6 {
			t.Errorf("%v: φ̂ differs from its closed form by %.3g", c, worst)
		}
		shift := int(float64(c.L) - float64(c.L)/2 - 1)
		for n, levels := range s.fb.psi {
			j, th := n/c.L, n%c.L
			sigma := 0.8 * math.Pow(2, float64(j))
			xi := 3 * math.Pi / 4 / math.Pow(2, float64(j))
			theta := float64(shift-th) * math.Pi / float64(c.L)
			slant := 4 / float64(c.L)
			k := periodicHat(0, 0, sigma, theta, xi, slant) / periodicHat(0, 0, sigma, theta, 0, slant)
			worst := 0.0
			for r := 0; r < M; r++ {
				for col := 0; col < N; col++ {
					w0, w1 := freq(r, col)
					want := periodicHat(w0, w1, sigma, theta, xi, slant) - k*periodicHat(w0, w1, sigma, theta, 0, slant)
					worst = math.Max(worst, math.Abs(levels[0][r*N+col]-want))
				}
			}
			if worst > 1e-6 {
				t.Errorf("%v: ψ̂ for j = %d, θ index %d differs from its closed form by %.3g", c, j, th, worst)
			}
			if z := levels[0][0]; math.Abs(z) > 1e-12 {
				t.Errorf("%v: ψ̂(0) = %g for j = %d, θ index %d; Morlet filters have zero mean", c, z, j, th)
			}
		}
	}
}

// TestPeriodizedLevels checks kymatio's periodisation of the filters to
// coarser resolutions: after its mask, each of the (M/2^r)×(N/2^r)
// frequencies k keeps exactly one alias, the fine frequency in
// [−M/2^(r+1), M/2^(r+1)) congruent to k, so the coarse filter is the fine
// filter sampled there.
func TestPeriodizedLevels(t *testing.T) {
	s, err := New(32, 40, 3, 8)
	if err != nil {
		t.Fatal(err)
	}
	M, N := s.mp, s.np
	check := func(name string, full, crop []float64, res int) {
		m, n := M>>res, N>>res
		if len(crop) != m*n {
			t.Fatalf("%s level %d has %d values, want %d", name, res, len(crop), m*n)
		}
		for k := 0; k < m; k++ {
			fk := k
			if k >= m/2 {
				fk = k - m + M
			}
			for l := 0; l < n; l++ {
				fl := l
				if l >= n/2 {
					fl = l - n + N
				}
				if got, want := crop[k*n+l], full[fk*N+fl]; got != want {
					t.Fatalf("%s level %d at (%d, %d) = %g, want %g", name, res, k, l, got, want)
				}
			}
		}
	}
	for res, lv := range s.fb.phi {
		check("φ", s.fb.phi[0], lv, res)
	}
	if len(s.fb.phi) != 3 {
		t.Errorf("φ has %d levels, want J = 3", len(s.fb.phi))
	}
	for n, levels := range s.fb.psi {
		j := n / 8
		// kymatio keeps min(j+1, max(J−1, 1)) levels of each wavelet.
		if want := min(j+1, 2); len(levels) != want {
			t.Errorf("ψ %d has %d levels, want %d", n, len(levels), want)
		}
		for res, lv := range levels {
			check("ψ", levels[0], lv, res)
		}
	}
}

// TestLittlewoodPaley checks the Littlewood–Paley sum of the bank for
// J = 2, L = 8, LP(ω) = |φ̂(ω)|² + Σ_{j,θ} (|ψ̂_{j,θ}(ω)|² + |ψ̂_{j,θ}(−ω)|²)/2,
// on the padded grids of MNIST and CIFAR-10. The bank covers every
// frequency (LP > 0; kymatio's bank has min LP ≈ 0.123, at the corners of
// the grid), and LP is at most its value at ω = 0, where only φ̂ is
// non-zero: (π/3.1415)², so the first layer is non-expansive up to kymatio's
// 3.1415 normalisation.
func TestLittlewoodPaley(t *testing.T) {
	bound := (math.Pi / 3.1415) * (math.Pi / 3.1415)
	for _, sz := range []int{28, 32} {
		s, err := New(sz, sz, 2, 8)
		if err != nil {
			t.Fatal(err)
		}
		M, N := s.mp, s.np
		lo, hi := math.Inf(1), 0.0
		for r := 0; r < M; r++ {
			for c := 0; c < N; c++ {
				k := r*N + c
				nk := ((M-r)%M)*N + (N-c)%N
				lp := s.fb.phi[0][k] * s.fb.phi[0][k]
				for _, p := range s.fb.psi {
					lp += (p[0][k]*p[0][k] + p[0][nk]*p[0][nk]) / 2
				}
				lo, hi = math.Min(lo, lp), math.Max(hi, lp)
			}
		}
		if lo < 0.12 {
			t.Errorf("%d×%d: min LP = %g, want ≥ 0.12", sz, sz, lo)
		}
		if hi > bound*(1+1e-9) {
			t.Errorf("%d×%d: max LP = %.12g exceeds (π/3.1415)² = %.12g", sz, sz, hi, bound)
		}
		if phi0 := s.fb.phi[0][0]; math.Abs(phi0*phi0-bound) > 1e-9 {
			t.Errorf("%d×%d: |φ̂(0)|² = %.12g, want (π/3.1415)² = %.12g", sz, sz, phi0*phi0, bound)
		}
	}
}
