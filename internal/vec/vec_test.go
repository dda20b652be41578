package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Tanh32 is within 2·10⁻⁷ of math.Tanh everywhere (absolute; relative near
// 0), odd, and ±1 far out.
func TestTanh32(t *testing.T) {
	var worst float64
	for i := -200000; i <= 200000; i++ {
		x := float32(i) * 1e-4 // [−20, 20]
		got, want := float64(Tanh32(x)), math.Tanh(float64(x))
		err := math.Abs(got - want)
		if math.Abs(want) < 1 {
			err = math.Min(err, err/math.Abs(want)) // relative where tanh is small
		}
		worst = math.Max(worst, err)
		if Tanh32(-x) != -Tanh32(x) {
			t.Fatalf("Tanh32 not odd at %v", x)
		}
	}
	if worst > 2e-7 {
		t.Fatalf("largest error %.3g", worst)
	}
	if Tanh32(1e-30) == 0 || Tanh32(30) != 1 || Tanh32(-30) != -1 {
		t.Fatalf("Tanh32(1e-30) = %v, Tanh32(±30) = %v, %v", Tanh32(1e-30), Tanh32(30), Tanh32(-30))
	}
}

// inputs returns n floats: normal draws at several scales, and the
// special values.
func inputs(rng *rand.Rand, n int) []float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 9, -9, 1e30, -1e30,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	x := make([]float32, n)
	for i := range x {
		if rng.IntN(8) == 0 {
			x[i] = special[rng.IntN(len(special))]
		} else {
			x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(5)-2)))
		}
	}
	return x
}

// same reports whether a and b are the same float32, or both NaN, or
// within 4 ulps (a build with GOAMD64=v3 lets the compiler fuse the Go
// loops' multiply-adds, which the AVX2 loops never do).
func same(a, b float32) bool {
	if a == b || (a != a && b != b) {
		return true
	}
	d := math.Float32bits(a) - math.Float32bits(b)
	return int32(d) >= -4 && int32(d) <= 4
}

// Every function gives what a plain Go loop gives, on every length from 0
// to 40 (so every tail) and a long one, special values included.
func TestMatchesLoops(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range append([]int{1000, 1003}, func() (l []int) {
		for n := 0; n <= 40; n++ {
			l = append(l, n)
		}
		return l
	}()...) {
		x, y := inputs(rng, n), inputs(rng, n)
		a := float32(rng.NormFloat64())
		check := func(name string, got []float32, want func(i int) float32) {
			t.Helper()
			for i := range got {
				if w := want(i); !same(got[i], w) {
					t.Fatalf("%s, n = %d: element %d is %v, want %v (x %v, y %v)", name, n, i, got[i], w, x[i], y[i])
				}
			}
		}
		got := append([]float32(nil), x...)
		Tanh(got)
		check("Tanh", got, func(i int) float32 { return Tanh32(x[i]) })
		got = append(got[:0], x...)
		TanhGrad(got, y)
		check("TanhGrad", got, func(i int) float32 { return x[i] * (1 - y[i]*y[i]) })
		got = append(got[:0], y...)
		Add(got, x)
		check("Add", got, func(i int) float32 { return y[i] + x[i] })
		got = append(got[:0], y...)
		Axpy(got, a, x)
		check("Axpy", got, func(i int) float32 { return y[i] + a*x[i] })
		z := inputs(rng, n)
		got = append(got[:0], y...)
		MulAdd(got, x, z)
		check("MulAdd", got, func(i int) float32 { return y[i] + x[i]*z[i] })
		got = append(got[:0], y...)
		SubSqAdd(got, x, z)
		check("SubSqAdd", got, func(i int) float32 { d := x[i] - z[i]; return y[i] + d*d })
		w := inputs(rng, n)
		SubMul(got, x, z, w)
		check("SubMul", got, func(i int) float32 { return (x[i] - z[i]) * w[i] })
		MulAddTo(got, x, z, w)
		check("MulAddTo", got, func(i int) float32 { return x[i]*z[i] + w[i] })
	}
}

func TestTranspose(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, rc := range [][2]int{{1, 1}, {8, 8}, {7, 9}, {8, 16}, {16, 8}, {81, 49}, {49, 81}, {10, 3969}, {17, 23}} {
		rows, cols := rc[0], rc[1]
		a := inputs(rng, rows*cols)
		dst := make([]float32, rows*cols)
		Transpose(rows, cols, a, dst)
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				if g, w := dst[j*rows+i], a[i*cols+j]; !same(g, w) {
					t.Fatalf("%d×%d: element (%d, %d) of the transpose is %v, want %v", rows, cols, j, i, g, w)
				}
			}
		}
	}
}

func BenchmarkTranspose(b *testing.B) {
	a, dst := make([]float32, 81*49), make([]float32, 81*49)
	b.SetBytes(int64(4 * len(a)))
	for range b.N {
		Transpose(81, 49, a, dst)
	}
}

func BenchmarkTanh(b *testing.B) {
	x := inputs(rand.New(rand.NewPCG(1, 2)), 4096)
	for b.Loop() {
		Tanh(x)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(x)), "ns/element")
}
