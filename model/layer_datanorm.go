package model

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// DataNormSpec is data normalisation: each channel c of the network's
// input feature map is standardised by a per-channel mean μ_c and variance
// v_c of the training data,
//
//	y[c,h,w] = (x[c,h,w] − μ_c) / √(v_c + DataNormEpsilon),  or 0 where v_c = 0,
//
// as Tramèr & Boneh ("Differentially Private Learning Needs Better
// Features (or Much More Data)", ICLR 2021, Section 3, "data
// normalization"; their code's standardize) normalise ScatterNet
// features. In a spec: {"type": "datanorm", "noise_multiplier": 8,
// "mean_clip_norm": 0.4, "square_clip_norm": 0.4}, every key optional.
//
// μ and v are not parameters: they have no gradient, are not clipped,
// noised or updated by DP-SGD, and the layer has no per-example gradient.
// They are the layer's buffers (Net.Buffers, named <layer>.mean and
// <layer>.var, like PyTorch's BatchNorm running statistics), estimated
// once before training with the Gaussian mechanism (dpsgd's data
// normalisation, which the run's ledger counts) and saved in the
// checkpoint. A new network holds μ = 0, v = 1.
//
// The estimate (dpsgd.EstimateDataNorm) clips each example's per-channel
// spatial means (a C-vector) to L2 norm MeanClipNorm and its per-channel
// spatial means of squares to SquareClipNorm, and adds Gaussian noise of
// NoiseMultiplier times the clip to each sum. Unlike Tramèr & Boneh, who
// clip at the median norm of the private data (itself a release the
// analysis does not count), the thresholds are fixed public constants.
//
// The statistics are of the layer's input as the training data holds it,
// so the layer must read the network's input (Arch.Input): it is the
// first layer, or the second right after a fixed front end (a scatter
// layer), in place of the group normalisation of Tramèr & Boneh's
// ScatterNet models. A network has at most one.
type DataNormSpec struct {
	// NoiseMultiplier σ of both sums (DefaultDataNormNoiseMultiplier when
	// absent); the estimate alone is two Gaussian mechanisms of noise
	// multiplier σ.
	NoiseMultiplier float64 `json:"noise_multiplier,omitempty"`
	// MeanClipNorm C_m (DefaultDataNormMeanClip when absent): each
	// example's vector of per-channel spatial means is clipped to this L2
	// norm.
	MeanClipNorm float64 `json:"mean_clip_norm,omitempty"`
	// SquareClipNorm C_s (DefaultDataNormSquareClip when absent): each
	// example's vector of per-channel spatial means of squares is clipped
	// to this L2 norm.
	SquareClipNorm float64 `json:"square_clip_norm,omitempty"`

	// bad is a key the spec gave an invalid value (0, which would be read
	// as absent, or a negative or non-finite number): check reports it.
	bad string
}

// Defaults of a datanorm layer's keys.
//
// σ = 8 is the larger of the two noise multipliers Tramèr & Boneh use for
// the normalisation of ScatterNet features on CIFAR-10 at ε = 3 (6 and 8;
// sampling rate 1): alone it costs ε ≈ 0.69 at δ = 10⁻⁵ under RDP.
//
// The clipping norms are medians measured on a validation split, where
// Tramèr & Boneh take the median of the private norms: MNIST's last 10,000
// training images (the split every built-in network's settings were
// chosen on; never the test set), through the scattering transform with
// J = 2, L = 8 of the images as dptune loads them (81×7×7 features). There
// the L2 norms of the examples' per-channel mean vectors have median 0.389
// (quartiles 0.348, 0.450; 90th percentile 0.513) and those of their
// mean-square vectors median 0.389 (quartiles 0.297, 0.513; 90th
// percentile 0.664). The noise on μ and E[x²], σ·C/N, is 5.3·10⁻⁵ for
// N = 60,000. Clipping at the medians biases the estimate, but less noise
// keeps more channels: a channel whose variance is below about the noise
// on E[x²] is estimated at v = 0 and dropped (its output is 0).
//
// On CIFAR-10 the norms are larger (the last 10,000 training images,
// 243×8×8 features: mean vectors median 0.907, quartiles 0.720, 1.214;
// mean-square vectors median 1.198, quartiles 0.780, 1.782), so a CIFAR-10
// spec sets its own: scatter-linear-cifar10 takes mean_clip_norm 0.9 and
// square_clip_norm 1.2.
const (
	DefaultDataNormNoiseMultiplier = 8
	DefaultDataNormMeanClip        = 0.4
	DefaultDataNormSquareClip      = 0.4
)

// DataNormEpsilon is the ε added to a datanorm layer's variance, Tramèr
// & Boneh's (and PyTorch's normalisations').
const DataNormEpsilon = 1e-5

// DataNorm is the LayerSpec of a data normalisation with noise multiplier
// sigma and clipping norms meanClip and squareClip (0: the default).
func DataNorm(sigma, meanClip, squareClip float64) LayerSpec {
	return layerOf(DataNormSpec{NoiseMultiplier: sigma, MeanClipNorm: meanClip, SquareClipNorm: squareClip})
}

func init() { RegisterLayer(DataNormSpec{}) }

func (DataNormSpec) Type() string   { return "datanorm" }
func (DataNormSpec) prefix() string { return "dn" }
func (DataNormSpec) role() role     { return roleInput }

// random draws a noise multiplier in [4, 12): the buffers, not the spec,
// hold what the layer computes.
func (DataNormSpec) random(rng *rand.Rand, _ int) (LayerSpec, bool) {
	return DataNorm(float64(4+rng.IntN(8)), 0, 0), true
}

// Resolved returns p with every absent key at its default.
func (p DataNormSpec) Resolved() DataNormSpec {
	if p.NoiseMultiplier == 0 {
		p.NoiseMultiplier = DefaultDataNormNoiseMultiplier
	}
	if p.MeanClipNorm == 0 {
		p.MeanClipNorm = DefaultDataNormMeanClip
	}
	if p.SquareClipNorm == 0 {
		p.SquareClipNorm = DefaultDataNormSquareClip
	}
	return p
}

// UnmarshalJSON reads the layer's keys, recording one given 0, a
// negative or a non-finite value for check.
func (p *DataNormSpec) UnmarshalJSON(b []byte) error {
	var raw struct {
		NoiseMultiplier *float64 `json:"noise_multiplier"`
		MeanClipNorm    *float64 `json:"mean_clip_norm"`
		SquareClipNorm  *float64 `json:"square_clip_norm"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*p = DataNormSpec{}
	for _, f := range []struct {
		key string
		v   *float64
		dst *float64
	}{{"noise_multiplier", raw.NoiseMultiplier, &p.NoiseMultiplier}, {"mean_clip_norm", raw.MeanClipNorm, &p.MeanClipNorm},
		{"square_clip_norm", raw.SquareClipNorm, &p.SquareClipNorm}} {
		if f.v == nil {
			continue
		}
		if !(*f.v > 0) && p.bad == "" {
			p.bad = f.key
		}
		*f.dst = *f.v
	}
	return nil
}

func (p DataNormSpec) check() error {
	if p.bad != "" {
		return fmt.Errorf("%s must be positive (leave it out for the default)", p.bad)
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"noise_multiplier", p.NoiseMultiplier}, {"mean_clip_norm", p.MeanClipNorm}, {"square_clip_norm", p.SquareClipNorm}} {
		if f.v < 0 || math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v > 1e6 {
			return fmt.Errorf("%s %v must be positive and at most 10⁶", f.key, f.v)
		}
	}
	return nil
}

func (DataNormSpec) shape(in Shape, _ bool) (Shape, error) {
	if err := in.needMap(); err != nil {
		return Shape{}, err
	}
	return in, nil
}

// readsInput: a datanorm layer's statistics are estimated on the training
// data as the network reads it.
func (DataNormSpec) readsInput() {}

// buffers: μ then v, one per channel.
func (DataNormSpec) buffers(l Layer) []Tensor {
	return []Tensor{{Name: l.Name + ".mean", Shape: []int{l.In}}, {Name: l.Name + ".var", Shape: []int{l.In}, Offset: l.In}}
}

// initBuffers sets μ = 0 and v = 1.
func (DataNormSpec) initBuffers(l Layer, buf []float32) {
	clear(buf[:l.In])
	for i := range buf[l.In:] {
		buf[l.In+i] = 1
	}
}

// DataNormAffine returns the scale and shift per channel that a datanorm
// layer with means mean and variances variance ([C] each) applies,
// y = x·scale + shift: scale = 1/√(v + DataNormEpsilon) and shift =
// −μ·scale, both 0 where v = 0 (or v is not a finite non-negative
// number). The graph and dpsgd's engine both compute the layer this way.
func DataNormAffine(mean, variance []float32) (scale, shift []float32) {
	scale, shift = make([]float32, len(mean)), make([]float32, len(mean))
	for c, v := range variance {
		if !(v > 0) || math.IsInf(float64(v), 1) {
			continue
		}
		s := 1 / math.Sqrt(float64(v)+DataNormEpsilon)
		scale[c], shift[c] = float32(s), float32(-float64(mean[c])*s)
	}
	return scale, shift
}

// node builds x·scale + shift with constants spread over the batch and
// the positions, from the network's buffers as they are when the graph is
// built.
func (p DataNormSpec) node(c *graphCtx, l Layer, h, _, _ *G.Node) *G.Node {
	buf := c.buffers[l.BufferOffset : l.BufferOffset+2*l.In]
	scale, shift := DataNormAffine(buf[:l.In], buf[l.In:])
	P := l.InH * l.InW
	full := func(name string, v []float32) *G.Node {
		d := make([]float32, c.B*l.In*P)
		for i := range d {
			d[i] = v[i/P%l.In]
		}
		return G.NewMatrix(c.g, tensor.Float32, G.WithShape(c.B*l.In, P), G.WithName(l.Name+"."+name),
			G.WithValue(tensor.New(tensor.WithShape(c.B*l.In, P), tensor.WithBacking(d))))
	}
	x := G.Must(G.Reshape(h, tensor.Shape{c.B * l.In, P}))
	out := G.Must(G.Add(G.Must(G.HadamardProd(x, full("scale", scale))), full("shift", shift)))
	return G.Must(G.Reshape(out, tensor.Shape{c.B, l.In, l.InH, l.InW}))
}

// onnx writes the layer as x·scale + shift per channel (DataNormAffine of
// its buffers): ONNX's Mul and Add.
func (DataNormSpec) onnx(g *onnxGraph, l Layer, in string) (string, error) {
	buf := g.net.Buffers[l.BufferOffset : l.BufferOffset+l.BufferSize]
	scale, shift := DataNormAffine(buf[:l.In], buf[l.In:])
	s := g.perChannel(l.Name+".scale", l.Flat, scale)
	t := g.perChannel(l.Name+".shift", l.Flat, shift)
	return g.node("Add", l.Name, []string{g.node("Mul", l.Name+"_scale", []string{in, s}), t}), nil
}
