package audit

import (
	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
)

// CanaryGradientNorm is the L2 norm of a Dirac canary's gradient before
// clipping, in units of the clipping norm C (1 under automatic clipping):
// the gradient is CanaryGradientNorm·C·e_j, and DP-SGD's own clipping
// (dpsgd.Clip.Factor: ClipFactor, or AutoClipFactor) is what brings its
// contribution down to C (to 4/(4 + γ) < 1 under automatic clipping). An
// implementation that skips clipping lets it count fourfold, which the
// audit sees.
const CanaryGradientNorm = 4

// NewDiracCanaries returns an AUDIT-ONLY engine hook (never use it to
// train a model for release): the examples at indices first, first+1, …,
// first+len(coords)−1 are Dirac gradient canaries — example first+k has
// the gradient CanaryGradientNorm·C·e_{coords[k]}, clipped by the run's
// rule (dpsgd.Clip.Factor) to C·e_{coords[k]}, or under automatic clipping
// to 4/(4 + γ)·e_{coords[k]} — the worst-case canary of Nasr et
// al. 2023 and Xiang et al.'s ETCV setting (§4), and, many at once on
// distinct coordinates, the white-box canaries of Steinke, Nasr &
// Jagielski's one-run audit. Every other example goes to inner, or, when
// inner is nil, has zero gradient (the setting X = ∅).
func NewDiracCanaries(inner dpsgd.Engine, first int, coords []int) dpsgd.Engine {
	return &diracCanaries{inner: inner, first: first, coords: coords}
}

type diracCanaries struct {
	inner  dpsgd.Engine
	first  int
	coords []int
	rest   []int
}

func (e *diracCanaries) ClippedSum(x []float32, y []uint8, idx []int, clip dpsgd.Clip, sum []float32) (float64, error) {
	e.rest = e.rest[:0]
	g := CanaryGradientNorm * clip.Sensitivity()
	c := float32(float64(clip.Factor(g)) * g)
	for _, i := range idx {
		if k := i - e.first; k >= 0 && k < len(e.coords) {
			sum[e.coords[k]] += c
		} else {
			e.rest = append(e.rest, i)
		}
	}
	if e.inner == nil || len(e.rest) == 0 {
		return 0, nil
	}
	return e.inner.ClippedSum(x, y, e.rest, clip, sum)
}

// WithCanarySlots is d with n more examples, blank and labelled 0, at
// indices d.N … d.N+n−1: the slots of Dirac canaries, whose gradients come
// from NewDiracCanaries's hook, not from their pixels.
func WithCanarySlots(d *data.Dataset, n int) *data.Dataset {
	c := *d
	size := d.C * d.H * d.W
	c.X = append(append(make([]float32, 0, len(d.X)+n*size), d.X...), make([]float32, n*size)...)
	c.Y = append(append(make([]uint8, 0, d.N+n), d.Y...), make([]uint8, n)...)
	c.N = d.N + n
	return &c
}
