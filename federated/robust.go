package federated

import (
	"fmt"
	"math"
	"slices"
)

// MaxModelUpdate is the L2 norm, in parameter units, to which the server
// clips each client's update (its parameters minus the round's global
// model) in a plain FedAvg round (FinalDPSGD or FinalNonPrivate) before
// averaging; an update with a non-finite parameter counts as a zero update.
// It is a bound on what one client — honest, failed or hostile — can do to
// the average (move it by at most MaxModelUpdate/n per round), not a
// privacy parameter: with FinalDPSGD each client's DP-SGD is what makes its
// update private, and clipping it afterwards is post-processing. It is far
// above the updates of honest training of the built-in networks (norms of
// at most a few hundred in one local epoch).
const MaxModelUpdate = 1e4

// clipModel is the model a client's parameters v stand for in the average:
// global plus v − global clipped to L2 norm bound, or global itself if v
// holds a non-finite value.
func clipModel(v, global []float32, bound float64) []float32 {
	norm := 0.0
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return slices.Clone(global)
		}
		d := float64(x) - float64(global[i])
		norm += d * d
	}
	norm = math.Sqrt(norm)
	f := 1.0
	if norm > bound {
		f = bound / norm
	}
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(global[i]) + f*(float64(x)-float64(global[i])))
	}
	return out
}

// SumBound is the largest L2 norm, in integer units, that the secure sum
// of m clients' Encode outputs can have except with probability at most
// MaxWrapProbability: m·B for the clipped, rounded updates plus, per
// coordinate, k·LocalStddev·√m for the sum of m discrete Gaussian shares
// (each LocalStddev²-sub-Gaussian, Canonne, Kamath & Steinke 2020), with
// k = √(2 ln(2d/MaxWrapProbability)) as in Check's wrap bound.
func (u UpdateSum) SumBound(m int) float64 {
	k := math.Sqrt(2 * math.Log(2*float64(u.Dimension)/MaxWrapProbability))
	return float64(m)*u.Bound() + math.Sqrt(float64(u.Dimension))*k*u.LocalStddev()*math.Sqrt(float64(m))
}

// CheckSum returns an error unless the secure sum of m encoded updates is
// within SumBound(m): a larger sum holds an input no honest client sends
// (a hostile client's unclipped update), and the round must not use it.
func (u UpdateSum) CheckSum(sum []uint64, m int) error {
	norm := 0.0
	for _, w := range sum {
		x := float64(int64(w))
		norm += x * x
	}
	if b := u.SumBound(m); !(math.Sqrt(norm) <= b) {
		return fmt.Errorf("dp-fedavg: the sum of %d updates has L2 norm %.4g, above the %.4g that clipped updates and their noise allow", m, math.Sqrt(norm), b)
	}
	return nil
}
