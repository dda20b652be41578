package scatter

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFloat32Stage bounds what computing the inverse DFTs and low-passes
// in float32 costs (transform32): on the kymatio reference images (two
// MNIST digits), digit-like blobs and uniform noise, every output channel
// is within 1e-6 relative error (‖Δ‖/‖channel‖) of the transform computed
// in float64 throughout, on the sizes of the built-in networks and of the
// kymatio reference cases. The 4×4 blobs need the float64 recomputation
// of U1 that secondOrder32 asks for (without it their error is 4e-5).
func TestFloat32Stage(t *testing.T) {
	cases := loadKymatio(t)
	type size struct{ h, w, J, L int }
	sizes := []size{{28, 28, 2, 8}, {32, 32, 2, 8}}
	for _, c := range cases {
		if sz := (size{c.H, c.W, c.J, c.L}); !slices.Contains(sizes, sz) {
			sizes = append(sizes, sz)
		}
	}
	for _, sz := range sizes {
		fast, err := New(sz.h, sz.w, sz.J, sz.L)
		if err != nil {
			t.Fatal(err)
		}
		exact, _ := New(sz.h, sz.w, sz.J, sz.L)
		exact.dft, exact.lp32 = nil, nil
		var imgs [][]float32
		for _, c := range cases {
			if c.H == sz.h && c.W == sz.w {
				imgs = append(imgs, c.Img)
			}
		}
		lo := max(1, sz.h/8)
		hi := min(sz.h, sz.w) - lo
		for seed := range uint64(4) {
			imgs = append(imgs, testImage(sz.h, sz.w, lo, hi, seed), uniformImage(sz.h, sz.w, seed))
		}
		worst := 0.0
		for _, img := range imgs {
			worst = max(worst, worstChannelError(t, fast, exact, img))
		}
		t.Logf("%d×%d J=%d L=%d: worst channel relative error %.3g", sz.h, sz.w, sz.J, sz.L, worst)
		if worst > 1e-6 {
			t.Errorf("%d×%d J=%d L=%d: float32 stage off by %.3g relative in a channel", sz.h, sz.w, sz.J, sz.L, worst)
		}
	}
}

func worstChannelError(t *testing.T, fast, exact *Scattering, img []float32) float64 {
	t.Helper()
	k, oh, ow := fast.OutShape()
	a, b := make([]float32, k*oh*ow), make([]float32, k*oh*ow)
	if err := fast.Transform(a, img); err != nil {
		t.Fatal(err)
	}
	if err := exact.Transform(b, img); err != nil {
		t.Fatal(err)
	}
	plane, worst := oh*ow, 0.0
	for ch := 0; ch < k; ch++ {
		e := relErr(a[ch*plane:(ch+1)*plane], b[ch*plane:(ch+1)*plane])
		if !math.IsNaN(e) {
			worst = max(worst, e)
		}
	}
	return worst
}

func uniformImage(h, w int, seed uint64) []float32 {
	img := make([]float32, h*w)
	rng := rand.New(rand.NewPCG(seed, 2))
	for i := range img {
		img[i] = rng.Float32()
	}
	return img
}
