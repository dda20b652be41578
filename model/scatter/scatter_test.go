package scatter

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"sync"
	"testing"
)

func TestNewShapes(t *testing.T) {
	for _, c := range []struct{ h, w, J, L, k, oh, ow int }{
		{28, 28, 2, 8, 81, 7, 7}, // MNIST
		{32, 32, 2, 8, 81, 8, 8}, // CIFAR-10, per channel
		{30, 27, 2, 8, 81, 7, 6}, // kymatio floors h/2^J
		{32, 32, 1, 8, 9, 16, 16},
		{32, 32, 3, 6, 127, 4, 4},
		{4, 4, 2, 1, 4, 1, 1},
	} {
		s, err := New(c.h, c.w, c.J, c.L)
		if err != nil {
			t.Fatalf("New(%d, %d, %d, %d): %v", c.h, c.w, c.J, c.L, err)
		}
		k, oh, ow := s.OutShape()
		if k != c.k || oh != c.oh || ow != c.ow {
			t.Errorf("New(%d, %d, %d, %d).OutShape() = %d, %d, %d; want %d, %d, %d", c.h, c.w, c.J, c.L, k, oh, ow, c.k, c.oh, c.ow)
		}
	}
	if mp, np := paddedSize(28, 28, 2); mp != 36 || np != 36 {
		t.Errorf("paddedSize(28, 28, 2) = %d, %d; kymatio's compute_padding gives 36, 36", mp, np)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, c := range []struct{ h, w, J, L int }{
		{28, 28, 0, 8}, {28, 28, -1, 8}, {28, 28, MaxJ + 1, 8}, {1 << 12, 1 << 12, 1 << 30, 8},
		{28, 28, 2, 0}, {28, 28, 2, -8}, {28, 28, 2, MaxL + 1},
		{3, 28, 2, 8}, {28, 3, 2, 8}, {0, 0, 2, 8}, {-28, 28, 2, 8},
		{4096, 4096, 2, 8}, {1 << 40, 1 << 40, 2, 8}, {math.MaxInt, 28, 2, 8},
		{1024, 1024, 8, 32}, // 2·10⁸ filter values
	} {
		if s, err := New(c.h, c.w, c.J, c.L); err == nil {
			k, oh, ow := s.OutShape()
			t.Errorf("New(%d, %d, %d, %d) accepted, giving %d×%d×%d", c.h, c.w, c.J, c.L, k, oh, ow)
		}
	}
}

func TestTransformRefusesLengths(t *testing.T) {
	s, err := New(28, 28, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	good := make([]float32, 81*7*7)
	for i := range good {
		good[i] = -1
	}
	if err := s.Transform(good, make([]float32, 28*27)); err == nil {
		t.Error("Transform accepted a 756-value image for 28×28")
	}
	if err := s.Transform(make([]float32, 81*7*7-1), make([]float32, 28*28)); err == nil {
		t.Error("Transform accepted a short output")
	}
	for _, v := range good {
		if v != -1 {
			t.Fatal("Transform wrote to dst while refusing")
		}
	}
}

// TestConstantImage: for a constant image c, S0 = c·φ̂(0) with φ̂(0) the
// closed form Σ_m G_σ(2πm) ≈ π/3.1415 (σ = 0.8·2^(J−1)), and every S1 and
// S2 coefficient vanishes because the Morlet wavelets have zero mean.
func TestConstantImage(t *testing.T) {
	const c = 0.7
	s, err := New(28, 28, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	img := make([]float32, 28*28)
	for i := range img {
		img[i] = c
	}
	k, oh, ow := s.OutShape()
	dst := make([]float32, k*oh*ow)
	if err := s.Transform(dst, img); err != nil {
		t.Fatal(err)
	}
	want := float64(float32(c)) * periodicHat(0, 0, 1.6, 0, 0, 1)
	for i, v := range dst[:oh*ow] {
		if math.Abs(float64(v)-want) > 1e-6*want {
			t.Fatalf("S0[%d] = %.9g, want %.9g", i, v, want)
		}
	}
	for i, v := range dst[oh*ow:] {
		if math.Abs(float64(v)) > 1e-9 {
			t.Fatalf("S1/S2 value %d (channel %d) = %g, want 0", i, 1+i/(oh*ow), v)
		}
	}
}

// direct is an independent spatial-domain scattering transform following
// kymatio's algorithm: reflection padding, circular convolutions computed
// by direct summation with the spatial filters (the inverse DFTs, also by
// direct summation, of the stored Fourier filters), subsampling by keeping
// every 2^j-th sample, modulus, the real part of the low-passed output and
// removal of one sample on each side.
func direct(s *Scattering, img []float32) [][]float64 {
	J, L := s.j, s.l
	M, N := s.mp, s.np
	x := make([]complex128, M*N)
	mirror := func(i, n int) int {
		if i < 0 {
			return -i
		}
		if i >= n {
			return 2*(n-1) - i
		}
		return i
	}
	// kymatio pads ⌊(M − h)/2⌋ rows above and the rest below, and likewise
	// for columns.
	top, left := (M-s.h)/2, (N-s.w)/2
	for r := 0; r < M; r++ {
		for c := 0; c < N; c++ {
			x[r*N+c] = complex(float64(img[mirror(r-top, s.h)*s.w+mirror(c-left, s.w)]), 0)
		}
	}
	lowpass := func(u []complex128, res int) []float64 {
		m, n := M>>res, N>>res
		y := down(circConv(u, idft2(s.fb.phi[res], m, n), m, n), m, n, 1<<(J-res))
		mo, no := M>>J, N>>J
		var out []float64
		for r := 1; r < mo-1; r++ {
			for c := 1; c < no-1; c++ {
				out = append(out, real(y[r*no+c]))
			}
		}
		return out
	}
	abs := func(u []complex128) []complex128 {
		for i, v := range u {
			u[i] = complex(cmplx.Abs(v), 0)
		}
		return u
	}
	out := [][]float64{lowpass(x, 0)}
	var second [][]float64
	for n1 := 0; n1 < J*L; n1++ {
		j1 := n1 / L
		u1 := abs(down(circConv(x, idft2(s.fb.psi[n1][0], M, N), M, N), M, N, 1<<j1))
		out = append(out, lowpass(u1, j1))
		m1, c1 := M>>j1, N>>j1
		for n2 := 0; n2 < J*L; n2++ {
			j2 := n2 / L
			if j2 <= j1 {
				continue
			}
			u2 := abs(down(circConv(u1, idft2(s.fb.psi[n2][j1], m1, c1), m1, c1), m1, c1, 1<<(j2-j1)))
			second = append(second, lowpass(u2, j2))
		}
	}
	return append(out, second...)
}

// idft2 is numpy's ifft2 of the real m×n spectrum f, by direct summation.
func idft2(f []float64, m, n int) []complex128 {
	out := make([]complex128, m*n)
	for a := 0; a < m; a++ {
		for b := 0; b < n; b++ {
			var sum complex128
			for k := 0; k < m; k++ {
				for l := 0; l < n; l++ {
					ph := 2 * math.Pi * (float64(a*k)/float64(m) + float64(b*l)/float64(n))
					sum += complex(f[k*n+l], 0) * cmplx.Exp(complex(0, ph))
				}
			}
			out[a*n+b] = sum / complex(float64(m*n), 0)
		}
	}
	return out
}

// circConv is (x ⊛ k)[p] = Σ_q x[q]·k[(p − q) mod (m, n)], by direct summation.
func circConv(x, k []complex128, m, n int) []complex128 {
	out := make([]complex128, m*n)
	for pr := 0; pr < m; pr++ {
		for pc := 0; pc < n; pc++ {
			var sum complex128
			for qr := 0; qr < m; qr++ {
				kr := ((pr-qr)%m + m) % m
				for qc := 0; qc < n; qc++ {
					kc := ((pc-qc)%n + n) % n
					sum += x[qr*n+qc] * k[kr*n+kc]
				}
			}
			out[pr*n+pc] = sum
		}
	}
	return out
}

// down keeps every f-th sample of the m×n x in both directions.
func down(x []complex128, m, n, f int) []complex128 {
	out := make([]complex128, 0, (m/f)*(n/f))
	for r := 0; r < m; r += f {
		for c := 0; c < n; c += f {
			out = append(out, x[r*n+c])
		}
	}
	return out
}

// TestDirectConvolution checks Transform's FFT path against direct,
// spatial-domain circular convolutions on small images, including sizes
// that are not multiples of 2^J and an odd L.
func TestDirectConvolution(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ h, w, J, L int }{{11, 10, 2, 4}, {9, 12, 1, 3}} {
		s, err := New(c.h, c.w, c.J, c.L)
		if err != nil {
			t.Fatal(err)
		}
		img := make([]float32, c.h*c.w)
		for i := range img {
			img[i] = rng.Float32()
		}
		k, oh, ow := s.OutShape()
		dst := make([]float32, k*oh*ow)
		if err := s.Transform(dst, img); err != nil {
			t.Fatal(err)
		}
		want := direct(s, img)
		if len(want) != k {
			t.Fatalf("%v: direct path gives %d channels, Transform %d", c, len(want), k)
		}
		for ch, w := range want {
			got := dst[ch*oh*ow : (ch+1)*oh*ow]
			var num, den float64
			for i := range w {
				d := float64(got[i]) - w[i]
				num += d * d
				den += w[i] * w[i]
			}
			if math.Sqrt(num) > 1e-6*math.Sqrt(den)+1e-9 {
				t.Errorf("%v channel %d: FFT path %v, direct %v", c, ch, got, w)
			}
		}
	}
}

// testImage returns an h×w image, zero outside rows and columns lo…hi−1,
// with random values in [0, 1) inside, smoothed once by a 3×3 box filter
// inside the square (a digit-like blob).
func testImage(h, w, lo, hi int, seed uint64) []float32 {
	rng := rand.New(rand.NewPCG(seed, 1))
	raw := make([]float64, h*w)
	for r := lo; r < hi; r++ {
		for c := lo; c < hi; c++ {
			raw[r*w+c] = rng.Float64()
		}
	}
	img := make([]float32, h*w)
	for r := lo; r < hi; r++ {
		for c := lo; c < hi; c++ {
			var sum float64
			for dr := -1; dr <= 1; dr++ {
				for dc := -1; dc <= 1; dc++ {
					sum += raw[(r+dr)*w+c+dc]
				}
			}
			img[r*w+c] = float32(sum / 9)
		}
	}
	return img
}

// shift moves the content of the h×w img by (dr, dc), filling with zeros.
func shift(img []float32, h, w, dr, dc int) []float32 {
	out := make([]float32, h*w)
	for r := 0; r < h; r++ {
		for c := 0; c < w; c++ {
			sr, sc := r-dr, c-dc
			if sr >= 0 && sr < h && sc >= 0 && sc < w {
				out[r*w+c] = img[sr*w+sc]
			}
		}
	}
	return out
}

// TestTranslationByTwoToTheJ: for an image that is zero near its border,
// reflection padding is zero padding, so a shift by 2^J = 4 pixels is a
// circular shift of the padded image; circular convolution commutes with
// it and the subsampling grid is preserved, so every output channel shifts
// by exactly one sample.
func TestTranslationByTwoToTheJ(t *testing.T) {
	s, err := New(28, 28, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	img := testImage(28, 28, 5, 19, 7)
	moved := shift(img, 28, 28, 4, 4)
	k, oh, ow := s.OutShape()
	a := make([]float32, k*oh*ow)
	b := make([]float32, k*oh*ow)
	if err := s.Transform(a, img); err != nil {
		t.Fatal(err)
	}
	if err := s.Transform(b, moved); err != nil {
		t.Fatal(err)
	}
	var scale float64
	for _, v := range a {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	for ch := 0; ch < k; ch++ {
		for r := 1; r < oh; r++ {
			for c := 1; c < ow; c++ {
				got := b[(ch*oh+r)*ow+c]
				want := a[(ch*oh+r-1)*ow+c-1]
				if math.Abs(float64(got-want)) > 1e-6*scale {
					t.Fatalf("channel %d (%d, %d): shifted image gives %g, want %g", ch, r, c, got, want)
				}
			}
		}
	}
}

// TestSmallShiftInvariance: a shift by one pixel, smaller than 2^J,
// changes the coefficients (relative to their norm) less than it changes
// the image, and less than half as much as a shift by 2^J does when the
// outputs are compared in place.
func TestSmallShiftInvariance(t *testing.T) {
	s, err := New(28, 28, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	k, oh, ow := s.OutShape()
	img := testImage(28, 28, 6, 18, 11)
	out := func(x []float32) []float32 {
		d := make([]float32, k*oh*ow)
		if err := s.Transform(d, x); err != nil {
			t.Fatal(err)
		}
		return d
	}
	base := out(img)
	one := shift(img, 28, 28, 1, 1)
	four := shift(img, 28, 28, 4, 4)
	dImg := relErr(one, img)
	d1 := relErr(out(one), base)
	d4 := relErr(out(four), base)
	t.Logf("image change %.3f, scattering change: shift 1 %.3f, shift 4 %.3f", dImg, d1, d4)
	if d1 > dImg {
		t.Errorf("a 1-pixel shift changes the image by %.3f and the scattering coefficients by %.3f", dImg, d1)
	}
	if d1 > d4/2 {
		t.Errorf("a 1-pixel shift changes the coefficients by %.3f, a 4-pixel one by %.3f", d1, d4)
	}
}

// TestOrientationOrder: for a plane wave at ψ_{j,θ}'s centre frequency
// ξ_j(cos θ, sin θ), the S1 channel j·L + θ has the most energy among the
// first-order channels of scale j.
func TestOrientationOrder(t *testing.T) {
	const L = 8
	s, err := New(32, 32, 2, L)
	if err != nil {
		t.Fatal(err)
	}
	k, oh, ow := s.OutShape()
	dst := make([]float32, k*oh*ow)
	img := make([]float32, 32*32)
	for j := 0; j < 2; j++ {
		xi := 3 * math.Pi / 4 / math.Pow(2, float64(j))
		for th := 0; th < L; th++ {
			theta := float64(3-th) * math.Pi / L
			for r := 0; r < 32; r++ {
				for c := 0; c < 32; c++ {
					img[r*32+c] = float32(math.Cos(xi * (math.Cos(theta)*float64(r) + math.Sin(theta)*float64(c))))
				}
			}
			if err := s.Transform(dst, img); err != nil {
				t.Fatal(err)
			}
			best, bestE := -1, 0.0
			for t2 := 0; t2 < L; t2++ {
				ch := 1 + j*L + t2
				var e float64
				for _, v := range dst[ch*oh*ow : (ch+1)*oh*ow] {
					e += float64(v) * float64(v)
				}
				if e > bestE {
					best, bestE = t2, e
				}
			}
			if best != th {
				t.Errorf("wave at j = %d, θ index %d: strongest S1 channel is θ index %d", j, th, best)
			}
		}
	}
}

// TestFirstLayerEnergy: by Parseval, the energy of the first wavelet layer
// on the padded grid, ‖x ⋆ φ‖² + Σ‖x ⋆ ψ‖² computed through the FFT path,
// equals Σ_ω |x̂(ω)|²·LP(ω)/(MN) and so lies between min LP·‖x‖² and
// max LP·‖x‖² for a real x.
func TestFirstLayerEnergy(t *testing.T) {
	s, err := New(28, 28, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	ws := s.newWorkspace()
	M, N := s.mp, s.np
	rng := rand.New(rand.NewPCG(5, 6))
	x := make([]complex128, M*N)
	var ex float64
	for i := range x {
		v := rng.NormFloat64()
		x[i] = complex(v, 0)
		ex += v * v
	}
	spec := make([]complex128, M*N)
	copy(spec, x)
	s.fft2(ws, spec, 0, false)

	filters := [][]float64{s.fb.phi[0]}
	for _, p := range s.fb.psi {
		filters = append(filters, p[0])
	}
	y := make([]complex128, M*N)
	var energy, parseval float64
	lo, hi := math.Inf(1), 0.0
	lp := make([]float64, M*N)
	for _, f := range filters {
		foldMul(y, spec, f, M, N, 1)
		s.fft2(ws, y, 0, true) // numpy's ifft2 times M·N
		for _, v := range y {
			energy += (real(v)*real(v) + imag(v)*imag(v)) / float64(M*N*M*N)
		}
		for i, v := range spec {
			parseval += (real(v)*real(v) + imag(v)*imag(v)) * f[i] * f[i] / float64(M*N)
		}
	}
	for r := 0; r < M; r++ {
		for c := 0; c < N; c++ {
			k, nk := r*N+c, ((M-r)%M)*N+(N-c)%N
			lp[k] = s.fb.phi[0][k] * s.fb.phi[0][k]
			for _, p := range s.fb.psi {
				lp[k] += (p[0][k]*p[0][k] + p[0][nk]*p[0][nk]) / 2
			}
			lo, hi = math.Min(lo, lp[k]), math.Max(hi, lp[k])
		}
	}
	if math.Abs(energy-parseval) > 1e-9*parseval {
		t.Errorf("layer energy %.12g, Parseval gives %.12g", energy, parseval)
	}
	if energy < lo*ex || energy > hi*ex {
		t.Errorf("layer energy %.6g outside [%.4g, %.4g]·‖x‖² = [%.6g, %.6g]", energy, lo, hi, lo*ex, hi*ex)
	}
}

func TestConcurrentTransform(t *testing.T) {
	s, err := New(28, 28, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	k, oh, ow := s.OutShape()
	const n = 8
	imgs := make([][]float32, n)
	want := make([][]float32, n)
	for i := range imgs {
		imgs[i] = testImage(28, 28, 4, 24, uint64(i))
		want[i] = make([]float32, k*oh*ow)
		if err := s.Transform(want[i], imgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make([]int, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := make([]float32, k*oh*ow)
			for rep := 0; rep < 3; rep++ {
				for i := range imgs {
					idx := (i + g) % n
					if err := s.Transform(dst, imgs[idx]); err != nil {
						errs[g]++
						continue
					}
					for j, v := range dst {
						if v != want[idx][j] {
							errs[g]++
							break
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	for g, e := range errs {
		if e != 0 {
			t.Errorf("goroutine %d: %d results differ from the sequential ones", g, e)
		}
	}
}

func TestTransformDoesNotAllocate(t *testing.T) {
	s, err := New(28, 28, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	k, oh, ow := s.OutShape()
	dst := make([]float32, k*oh*ow)
	img := testImage(28, 28, 4, 24, 1)
	if err := s.Transform(dst, img); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(10, func() { _ = s.Transform(dst, img) }); n != 0 {
		t.Errorf("Transform made %v allocations per call after warm-up", n)
	}
}

// TestTransformChannels: a 3-channel image gives the three channels'
// transforms one after another.
func TestTransformChannels(t *testing.T) {
	s, err := New(32, 32, 2, 8)
	if err != nil {
		t.Fatal(err)
	}
	k, oh, ow := s.OutShape()
	plane := k * oh * ow
	img := make([]float32, 0, 3*32*32)
	for c := range 3 {
		img = append(img, testImage(32, 32, 2, 30, uint64(10+c))...)
	}
	dst := make([]float32, 3*plane)
	if err := s.TransformChannels(dst, img, 3); err != nil {
		t.Fatal(err)
	}
	one := make([]float32, plane)
	for c := range 3 {
		if err := s.Transform(one, img[c*32*32:(c+1)*32*32]); err != nil {
			t.Fatal(err)
		}
		for i, v := range one {
			if dst[c*plane+i] != v {
				t.Fatalf("channel %d value %d: %g, Transform gives %g", c, i, dst[c*plane+i], v)
			}
		}
	}
	for _, bad := range []int{0, -1, 2, 4} {
		if err := s.TransformChannels(dst, img, bad); err == nil {
			t.Errorf("TransformChannels accepted c = %d for a 3-channel image", bad)
		}
	}
	if err := s.TransformChannels(dst[:len(dst)-1], img, 3); err == nil {
		t.Error("TransformChannels accepted a short output")
	}
}
