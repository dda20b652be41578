package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// naive is C += A·B in float64.
func naive(m, n, k int, a []float32, rsA, csA int, b []float32, ldb int, c []float64, ldc int) {
	for i := range m {
		for j := range n {
			var s float64
			for p := range k {
				s += float64(a[i*rsA+p*csA]) * float64(b[p*ldb+j])
			}
			c[i*ldc+j] += s
		}
	}
}

func random(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// product is one Mul call's operands: A plain or transposed, and padded
// strides, so that reading or writing outside the shape shows.
type product struct {
	m, n, k, rsA, csA, ldb, ldc int
	a, b, c                     []float32
}

func newProduct(rng *rand.Rand, m, n, k int, trans bool) product {
	p := product{m: m, n: n, k: k, rsA: k + 3, csA: 1, ldb: n + 5, ldc: n + 1}
	if trans {
		p.rsA, p.csA = 1, m+2
	}
	p.a = random(rng, (m-1)*p.rsA+(k-1)*p.csA+1)
	p.b = random(rng, (k-1)*p.ldb+n)
	p.c = random(rng, (m-1)*p.ldc+n)
	return p
}

// mul runs Mul on the named kernel, on a copy of C, and returns it.
func (p product) mul(t *testing.T, kernel string) []float32 {
	prev, err := SetKernel(kernel)
	if err != nil {
		t.Fatal(err)
	}
	defer SetKernel(prev)
	c := append([]float32(nil), p.c...)
	Mul(p.m, p.n, p.k, p.a, p.rsA, p.csA, p.b, p.ldb, c, p.ldc)
	return c
}

func (p product) String() string {
	return fmt.Sprintf("m=%d n=%d k=%d rsA=%d csA=%d", p.m, p.n, p.k, p.rsA, p.csA)
}

// mulShapes are the networks' shapes and ragged ones that exercise every
// strip and edge of every kernel.
var mulShapes = [][3]int{{16, 16, 64}, {32, 256, 25}, {16, 64, 196}, {4, 16, 1}, {7, 33, 5}, {1, 1, 1}, {13, 10, 32}, {64, 512, 32}, {5, 47, 130},
	{6, 40, 600}, {3, 100, 513}, {33, 300, 1030}, // k in several blocks of kc
	{1352, 16, 64}, {200, 32, 256}, {32, 27, 100}, {35, 16, 9}, {17, 48, 40}, {23, 80, 3}, {9, 63, 300}}

// Mul against a float64 loop on every kernel this machine can run.
func TestMulMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range mulShapes {
		for _, trans := range []bool{false, true} {
			p := newProduct(rng, s[0], s[1], s[2], trans)
			want := make([]float64, len(p.c))
			for i, v := range p.c {
				want[i] = float64(v)
			}
			naive(p.m, p.n, p.k, p.a, p.rsA, p.csA, p.b, p.ldb, want, p.ldc)
			for _, kernel := range Kernels() {
				c := p.mul(t, kernel)
				for i := range c {
					if math.Abs(float64(c[i])-want[i]) > 1e-5*(1+math.Abs(want[i]))*math.Sqrt(float64(p.k)) {
						t.Fatalf("%s, kernel %s: c[%d] = %v, want %v", p, kernel, i, c[i], want[i])
					}
				}
			}
		}
	}
}

// The AVX-512 kernels give the AVX2 kernels' bits on every shape: each
// element of C is the same chain of fused multiply-adds. The shapes are
// mulShapes, every m ≤ 40 and n ≤ 70 (every strip and edge, with k across
// kc blocks in turn), and random ones up to 600×600×600.
func TestKernelsBitIdentical(t *testing.T) {
	if !slices.Contains(Kernels(), "avx512") {
		t.Skipf("no AVX-512 here (kernels %v)", Kernels())
	}
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := slices.Clone(mulShapes)
	for m := 1; m <= 40; m++ {
		for n := 1; n <= 70; n++ {
			shapes = append(shapes, [3]int{m, n, []int{1, 7, 130, 300}[(m+n)%4]})
		}
	}
	for range 60 {
		shapes = append(shapes, [3]int{1 + rng.IntN(600), 1 + rng.IntN(600), 1 + rng.IntN(600)})
	}
	for _, s := range shapes {
		for _, trans := range []bool{false, true} {
			p := newProduct(rng, s[0], s[1], s[2], trans)
			want, got := p.mul(t, "avx2-fma"), p.mul(t, "avx512")
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: c[%d] = %v on avx512, %v on avx2-fma", p, i, got[i], want[i])
				}
			}
		}
	}
}

func TestSetKernel(t *testing.T) {
	kernels := Kernels()
	if kernels[len(kernels)-1] != Kernel() && os.Getenv("DPTUNE_GEMM_KERNEL") == "" {
		t.Errorf("Mul uses %s, want the fastest of %v", Kernel(), kernels)
	}
	prev, err := SetKernel("go")
	if err != nil || Kernel() != "go" {
		t.Fatalf("SetKernel(go): %v, Kernel() = %s", err, Kernel())
	}
	defer SetKernel(prev)
	for _, name := range []string{"sse", "", "AVX512"} {
		if _, err := SetKernel(name); err == nil || Kernel() != "go" {
			t.Errorf("SetKernel(%q): error %v, kernel now %s", name, err, Kernel())
		}
	}
	if slices.Contains(kernels, "avx2-fma") {
		if _, err := SetKernel("avx2"); err != nil || Kernel() != "avx2-fma" {
			t.Errorf("SetKernel(avx2): %v, Kernel() = %s", err, Kernel())
		}
	} else if _, err := SetKernel("avx2"); err == nil {
		t.Errorf("SetKernel(avx2) succeeded without the kernel (%v)", kernels)
	}
}

func TestMulPanicsOnShortSlices(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	Mul(4, 16, 8, make([]float32, 31), 8, 1, make([]float32, 128), 16, make([]float32, 64), 16)
}

// benchShape times C += A·B for an m×n×k shape, A transposed (column
// stride m) or not, on the kernel Mul uses, and reports GFLOP/s.
func benchShape(b *testing.B, m, n, k int, transA bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, x, c := random(rng, m*k), random(rng, k*n), make([]float32, m*n)
	rs, cs := k, 1
	if transA {
		rs, cs = 1, m
	}
	for b.Loop() {
		Mul(m, n, k, a, rs, cs, x, n, c, n)
	}
	b.ReportMetric(2*float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// benchShapes are the engine's GEMMs as it calls them in a DP-SGD step:
// tb-mnist at its chunk of 8 examples (the five take 98% of its GEMM
// FLOPs), tb-cifar10 at its chunk of one example (conv2, conv4 and conv6:
// 73% of its FLOPs; conv3 and conv5 are like conv4 and conv6 with half
// the inner or output width). fwd is the forward pass [positions × fan-in]
// · [fan-in × channels], bwd the gradient of the unfolded input, wgrad an
// example's weight gradient with A transposed.
var benchShapes = []struct {
	name    string
	m, n, k int
	transA  bool
}{
	{"tb-mnist-conv1-fwd", 1352, 16, 64, false},
	{"tb-mnist-conv1-wgrad", 16, 64, 169, true},
	{"tb-mnist-conv2-fwd", 200, 32, 256, false},
	{"tb-mnist-conv2-bwd", 200, 256, 32, false},
	{"tb-mnist-conv2-wgrad", 32, 256, 25, true},
	{"tb-cifar10-conv1-fwd", 1024, 32, 27, false},
	{"tb-cifar10-conv2-fwd", 1024, 32, 288, false},
	{"tb-cifar10-conv2-bwd", 1024, 288, 32, false},
	{"tb-cifar10-conv2-wgrad", 32, 288, 1024, true},
	{"tb-cifar10-conv4-fwd", 256, 64, 576, false},
	{"tb-cifar10-conv4-bwd", 256, 576, 64, false},
	{"tb-cifar10-conv4-wgrad", 64, 576, 256, true},
	{"tb-cifar10-conv6-fwd", 64, 128, 1152, false},
	{"tb-cifar10-conv6-bwd", 64, 1152, 128, false},
	{"tb-cifar10-conv6-wgrad", 128, 1152, 64, true},
}

// BenchmarkMul times benchShapes on each assembly kernel this machine can
// run (on "go" where there is none), one kernel after the other for each
// shape, so that kernels are compared in the same sitting.
func BenchmarkMul(b *testing.B) {
	kernels := Kernels()
	if len(kernels) > 1 {
		kernels = kernels[1:]
	}
	for _, s := range benchShapes {
		for _, kernel := range kernels {
			b.Run(s.name+"/"+kernel, func(b *testing.B) {
				prev, err := SetKernel(kernel)
				if err != nil {
					b.Fatal(err)
				}
				defer SetKernel(prev)
				benchShape(b, s.m, s.n, s.k, s.transA)
			})
		}
	}
}

// opacus-mnist's conv2 at batch 256: forward [6400×256]·[256×32], and one
// example's weight gradient [32×25]ᵀ·[25×256], on the kernel Mul uses
// (DPTUNE_GEMM_KERNEL chooses one).
func BenchmarkMulConv2Forward(b *testing.B)    { benchShape(b, 6400, 32, 256, false) }
func BenchmarkMulConv2WeightGrad(b *testing.B) { benchShape(b, 32, 256, 25, true) }

// A DPTUNE_GEMM_KERNEL this machine cannot follow is reported by EnvError,
// with the fastest kernel left in use, not a panic at start-up: checked in
// a child process started with the variable set.
func TestEnvErrorReportsABadKernel(t *testing.T) {
	if os.Getenv("DPTUNE_GEMM_KERNEL") == "no-such-kernel" {
		if err := EnvError(); err == nil || !strings.Contains(err.Error(), `unknown kernel "no-such-kernel"`) {
			t.Fatalf("EnvError() = %v", err)
		}
		if got, want := Kernel(), Kernels()[len(Kernels())-1]; got != want {
			t.Fatalf("kernel %s after a bad variable, want the fastest, %s", got, want)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEnvErrorReportsABadKernel$")
	cmd.Env = append(os.Environ(), "DPTUNE_GEMM_KERNEL=no-such-kernel")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
