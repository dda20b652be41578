package gemm

import (
	"math"
	"math/rand/v2"
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

// Mul against a float64 loop, for the network's shapes and for ragged ones
// that exercise every tail, with A plain and transposed and padded strides.
func TestMulMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := [][3]int{{16, 16, 64}, {32, 256, 25}, {16, 64, 196}, {4, 16, 1}, {7, 33, 5}, {1, 1, 1}, {13, 10, 32}, {64, 512, 32}, {5, 47, 130},
		{6, 40, 600}, {3, 100, 513}, {33, 300, 1030}} // k in several blocks of kc
	for _, s := range shapes {
		m, n, k := s[0], s[1], s[2]
		for _, trans := range []bool{false, true} {
			rsA, csA := k+3, 1
			if trans {
				rsA, csA = 1, m+2
			}
			a := random(rng, (m-1)*rsA+(k-1)*csA+1)
			ldb, ldc := n+5, n+1
			b := random(rng, (k-1)*ldb+n)
			c := random(rng, (m-1)*ldc+n)
			want := make([]float64, len(c))
			for i, v := range c {
				want[i] = float64(v)
			}
			naive(m, n, k, a, rsA, csA, b, ldb, want, ldc)
			Mul(m, n, k, a, rsA, csA, b, ldb, c, ldc)
			for i := range c {
				if math.Abs(float64(c[i])-want[i]) > 1e-5*(1+math.Abs(want[i]))*math.Sqrt(float64(k)) {
					t.Fatalf("m=%d n=%d k=%d transposed=%v: c[%d] = %v, want %v", m, n, k, trans, i, c[i], want[i])
				}
			}
		}
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
// stride m) or not, and reports GFLOP/s.
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

// opacus-mnist's conv2 at batch 256: forward [6400×256]·[256×32], and one
// example's weight gradient [32×25]ᵀ·[25×256].
func BenchmarkMulConv2Forward(b *testing.B)    { benchShape(b, 6400, 32, 256, false) }
func BenchmarkMulConv2WeightGrad(b *testing.B) { benchShape(b, 32, 256, 25, true) }

// tb-cifar10's shapes for one example: conv1 forward ([1024×27]·[27×32]),
// conv2 forward, backward to its input and weight gradient (k = 1024
// positions, in four blocks of kc), and conv6's weight gradient.
func BenchmarkMulTBCIFAR10Conv1Forward(b *testing.B)    { benchShape(b, 1024, 32, 27, false) }
func BenchmarkMulTBCIFAR10Conv2Forward(b *testing.B)    { benchShape(b, 1024, 32, 288, false) }
func BenchmarkMulTBCIFAR10Conv2Backward(b *testing.B)   { benchShape(b, 1024, 288, 32, false) }
func BenchmarkMulTBCIFAR10Conv2WeightGrad(b *testing.B) { benchShape(b, 32, 288, 1024, true) }
func BenchmarkMulTBCIFAR10Conv6WeightGrad(b *testing.B) { benchShape(b, 128, 1152, 64, true) }
