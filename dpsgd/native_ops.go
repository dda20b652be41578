package dpsgd

import (
	"math"

	"github.com/dptune/dptune/internal/vec"
	"github.com/dptune/dptune/model"
)

// Small helpers shared by the native engine's layers.

// window is a layer with a square kernel sliding over its input: its
// shapes and its kernel size, stride and padding.
type window struct {
	model.Layer
	Kernel, Stride, Pad int
}

// FanIn is the inputs of one output unit of a convolution: In·Kernel².
func (w window) FanIn() int { return w.In * w.Kernel * w.Kernel }

// kept calls fn(lo, hi) for each maximal run [lo, hi) of examples whose
// clipping factor f is not 0 (all of them, in one call, when none is
// left out).
func kept(f []float64, fn func(lo, hi int)) {
	for lo := 0; lo < len(f); {
		if f[lo] == 0 {
			lo++
			continue
		}
		hi := lo + 1
		for hi < len(f) && f[hi] != 0 {
			hi++
		}
		fn(lo, hi)
		lo = hi
	}
}

// transpose writes the rows×cols matrix a as dst (cols×rows).
func transpose(rows, cols int, a, dst []float32) { vec.Transpose(rows, cols, a, dst) }

// sumRows adds (or, with overwrite, writes) the column sums of m ([rows,
// len(out)]) to out.
func sumRows(m, out []float32, overwrite bool) {
	if overwrite {
		clear(out)
	}
	C := len(out)
	for r := 0; r+C <= len(m); r += C {
		vec.Add(out, m[r:r+C])
	}
}

// scale multiplies v by f in place; f = 0 zeroes v (even NaNs).
func scale(v []float32, f float64) {
	if f == 1 {
		return
	}
	if f == 0 {
		clear(v)
		return
	}
	s := float32(f)
	for i := range v {
		v[i] *= s
	}
}

// axpy adds f·x to y.
func axpy(y []float32, f float64, x []float32) {
	vec.Axpy(y, float32(f), x)
}

// b2i is 1 for true and 0 for false (compiled to a SETcc, no branch).
func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// sq is Σ v², accumulated in float64 (four running sums, so that the
// additions do not wait on each other).
func sq(v []float32) float64 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(v); i += 4 {
		w := v[i : i+4 : i+4]
		a, b, c, d := float64(w[0]), float64(w[1]), float64(w[2]), float64(w[3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for _, x := range v[i:] {
		s0 += float64(x) * float64(x)
	}
	return (s0 + s1) + (s2 + s3)
}

// softmaxCrossEntropy writes each example's gradient softmax − onehot(label)
// of the logits ([n, O]) to g and returns the summed cross-entropy
// (computed in float64).
func softmaxCrossEntropy(logits []float32, O int, y []uint8, idx []int, g []float32) float64 {
	var loss float64
	for k, i := range idx {
		z, gk := logits[k*O:(k+1)*O], g[k*O:(k+1)*O]
		m := math.Inf(-1)
		for _, v := range z {
			m = math.Max(m, float64(v))
		}
		var s float64
		for _, v := range z {
			s += math.Exp(float64(v) - m)
		}
		lse := m + math.Log(s)
		loss += lse - float64(z[y[i]])
		for o, v := range z {
			gk[o] = float32(math.Exp(float64(v) - lse))
		}
		gk[y[i]]--
	}
	return loss
}
