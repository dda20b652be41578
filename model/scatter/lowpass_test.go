package scatter

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDenseLowpass: the dense separable low-pass G·U·Hᵀ gives, up to
// rounding, the coefficients of kymatio's Fourier-domain low-pass (product
// with φ̂, periodisation, inverse FFT, real part, unpadding), which New
// uses for images whose padded side exceeds maxDense. Both paths are run
// in float64, on two Scatterings, one with its dense operators removed.
func TestDenseLowpass(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ h, w, J, L int }{
		{28, 28, 2, 8}, {32, 32, 2, 8}, {11, 10, 2, 4}, {9, 12, 1, 3}, {32, 32, 3, 6}, {20, 24, 4, 3},
	} {
		s, err := New(c.h, c.w, c.J, c.L)
		if err != nil {
			t.Fatal(err)
		}
		if s.lp == nil {
			t.Fatalf("%v: no dense low-pass for a %d×%d padded image", c, s.mp, s.np)
		}
		f, err := New(c.h, c.w, c.J, c.L)
		if err != nil {
			t.Fatal(err)
		}
		f.lp = nil
		// Both in float64 (the float32 stage has its own test).
		s.dft, s.lp32, f.dft, f.lp32 = nil, nil, nil, nil
		img := make([]float32, c.h*c.w)
		for i := range img {
			img[i] = rng.Float32()
		}
		k, oh, ow := s.OutShape()
		dense, fft := make([]float32, k*oh*ow), make([]float32, k*oh*ow)
		if err := s.Transform(dense, img); err != nil {
			t.Fatal(err)
		}
		if err := f.Transform(fft, img); err != nil {
			t.Fatal(err)
		}
		plane := oh * ow
		for ch := 0; ch < k; ch++ {
			var num, den float64
			for i := ch * plane; i < (ch+1)*plane; i++ {
				d := float64(dense[i]) - float64(fft[i])
				num += d * d
				den += float64(fft[i]) * float64(fft[i])
			}
			// Both are rounded to float32 at the end.
			if math.Sqrt(num) > 2e-7*math.Sqrt(den)+1e-12 {
				t.Errorf("%v channel %d: dense %v, FFT %v", c, ch, dense[ch*plane:(ch+1)*plane], fft[ch*plane:(ch+1)*plane])
			}
		}
	}
	big, err := New(maxDense, maxDense, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	if big.lp != nil {
		t.Errorf("dense low-pass built for a %d×%d padded image, above maxDense = %d", big.mp, big.np, maxDense)
	}
}
