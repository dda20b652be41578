package dpsgd

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/noise"
)

// dataNormStage is a datanorm layer (model.DataNormSpec) on
// positions-major feature maps ([n, P, C]): y = x·scale_c + shift_c with
// the scale and shift of model.DataNormAffine, from the network's buffers
// μ and v. It has no parameters; its input gradient is g·scale_c.
type dataNormStage struct {
	l            model.Layer
	scale, shift []float32
}

func init() {
	register("datanorm", rule{build: func(ls []model.Layer, _ bool) (stage, int) {
		return &dataNormStage{l: ls[0]}, 1
	}, spend: func(k model.LayerKind) Mechanism {
		p := k.(model.DataNormSpec).Resolved()
		return DataNorm{NoiseMultiplier: p.NoiseMultiplier, MeanClipNorm: p.MeanClipNorm, SquareClipNorm: p.SquareClipNorm}
	}})
}

func (s *dataNormStage) layer() model.Layer { return s.l }
func (s *dataNormStage) exampleFloats() int { return 0 }
func (s *dataNormStage) newBuffers(int) any { return nil }
func (s *dataNormStage) prepare([]float32)  {}

// prepareBuffers implements bufferStage.
func (s *dataNormStage) prepareBuffers(b []float32) {
	l := s.l
	s.scale, s.shift = model.DataNormAffine(b[l.BufferOffset:l.BufferOffset+l.In], b[l.BufferOffset+l.In:l.BufferOffset+2*l.In])
}

func (s *dataNormStage) forward(_ any, n int, in, out []float32) {
	C := s.l.In
	for p := 0; p < n*s.l.InH*s.l.InW; p++ {
		x, y := in[p*C:(p+1)*C], out[p*C:(p+1)*C]
		for c, v := range x {
			y[c] = v*s.scale[c] + s.shift[c]
		}
	}
}

func (s *dataNormStage) backward(_ any, n int, _, _, gOut, gIn []float32) {
	if gIn == nil {
		return
	}
	C := s.l.In
	for p := 0; p < n*s.l.InH*s.l.InW; p++ {
		g, d := gOut[p*C:(p+1)*C], gIn[p*C:(p+1)*C]
		for c, v := range g {
			d[c] = v * s.scale[c]
		}
	}
}

// DataNorm is the private estimation of a datanorm layer's statistics
// (model.DataNormSpec), the layer's privacy-spending stage (Mechanism):
// Tramèr & Boneh's data normalisation ("Differentially Private Learning
// Needs Better Features (or Much More Data)", ICLR 2021, Section 3) with
// fixed, public clipping norms in place of their median of the private
// norms.
type DataNorm struct {
	// NoiseMultiplier σ of both noisy sums: the noise is N(0, σ²C_m²) per
	// channel on the sum of means, N(0, σ²C_s²) on the sum of squares.
	NoiseMultiplier float64
	// MeanClipNorm C_m and SquareClipNorm C_s: the L2 norms each example's
	// vector of per-channel means and of per-channel mean squares are
	// clipped to.
	MeanClipNorm, SquareClipNorm float64
}

// dataNormLabel labels a datanorm layer's estimate in a ledger.
const dataNormLabel = "data normalisation: Gaussian estimate of the datanorm layer's per-channel mean and variance"

// Cost is Event: the estimate is of the whole training set, whatever its
// nominal size.
func (d DataNorm) Cost(float64) accounting.Event { return d.Event() }

// Label implements Mechanism.
func (DataNorm) Label() string { return dataNormLabel }

// Sigma is d.NoiseMultiplier.
func (d DataNorm) Sigma() float64 { return d.NoiseMultiplier }

// Event is the estimation's privacy cost: two Gaussian mechanisms of noise
// multiplier σ and sensitivity 1 (in units of their clipping norms: under
// add/remove adjacency one example moves each clipped sum by at most its
// clipping norm in L2), each on the whole training set (sampling rate 1).
func (d DataNorm) Event() accounting.Event {
	g := accounting.Gaussian{NoiseMultiplier: d.NoiseMultiplier, Sensitivity: 1}
	return accounting.Composed{Events: []accounting.Event{g, g}}
}

// Validate returns an error unless σ and both clipping norms are positive
// and finite.
func (d DataNorm) Validate() error {
	switch {
	case !(d.NoiseMultiplier > 0) || math.IsInf(d.NoiseMultiplier, 1):
		return fmt.Errorf("data normalisation noise multiplier %v must be positive and finite", d.NoiseMultiplier)
	case !(d.MeanClipNorm > 0) || math.IsInf(d.MeanClipNorm, 1) || !(d.SquareClipNorm > 0) || math.IsInf(d.SquareClipNorm, 1):
		return fmt.Errorf("data normalisation clipping norms %v and %v must be positive and finite", d.MeanClipNorm, d.SquareClipNorm)
	}
	return nil
}

// DataNormStats estimates the per-channel mean μ and variance v of the n
// examples of x ([n, C, P]: C channels of P positions each, the layout of a
// dataset's feature maps) with the Gaussian mechanism (Tramèr & Boneh 2021,
// Section 3, without their data-dependent clipping):
//
//	m_i = per-channel spatial mean of example i, clipped to L2 norm C_m;
//	s_i = per-channel spatial mean of squares of example i, clipped to C_s;
//	μ = (Σ_i m_i + N(0, σ²C_m² I)) / N,  E[x²] = (Σ_i s_i + N(0, σ²C_s² I)) / N,
//	v = max(E[x²] − μ², 0),
//
// with σ = d.NoiseMultiplier (0: no noise, for non-private training and
// tests) and N = nominalN, the training set's public nominal size, never
// n. An example with a non-finite value counts as zero vectors. The sums
// are kept in float64; the noise is added to their float32 values with
// noise.AddGaussian (secure: the draw DP-SGD's noise uses unseeded), from
// rng. It stops with ctx's error when ctx is cancelled.
func DataNormStats(ctx context.Context, x []float32, n, C, P int, d DataNorm, nominalN float64, secure bool, rng *rand.Rand) (mean, variance []float32, err error) {
	if len(x) != n*C*P || C < 1 || P < 1 {
		return nil, nil, fmt.Errorf("dpsgd: data normalisation: %d values for %d examples of %d×%d", len(x), n, C, P)
	}
	if !(nominalN > 0) || math.IsInf(nominalN, 1) {
		return nil, nil, fmt.Errorf("dpsgd: data normalisation: nominal size %v must be positive", nominalN)
	}
	sumM, sumS := make([]float64, C), make([]float64, C)
	m, s := make([]float64, C), make([]float64, C)
	for i := 0; i < n; i++ {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		ex := x[i*C*P : (i+1)*C*P]
		var nm, ns float64
		for c := range C {
			var a, b float64
			for _, v := range ex[c*P : (c+1)*P] {
				a += float64(v)
				b += float64(v) * float64(v)
			}
			m[c], s[c] = a/float64(P), b/float64(P)
			nm += m[c] * m[c]
			ns += s[c] * s[c]
		}
		if math.IsNaN(nm+ns) || math.IsInf(nm+ns, 0) {
			continue
		}
		fm, fs := clipScale(nm, d.MeanClipNorm), clipScale(ns, d.SquareClipNorm)
		for c := range C {
			sumM[c] += fm * m[c]
			sumS[c] += fs * s[c]
		}
	}
	mean, variance = make([]float32, C), make([]float32, C)
	squares := make([]float32, C)
	for c := range C {
		mean[c], squares[c] = float32(sumM[c]), float32(sumS[c])
	}
	noise.AddGaussian(mean, d.NoiseMultiplier*d.MeanClipNorm, secure, rng)
	noise.AddGaussian(squares, d.NoiseMultiplier*d.SquareClipNorm, secure, rng)
	for c := range C {
		mu, e2 := float64(mean[c])/nominalN, float64(squares[c])/nominalN
		mean[c], variance[c] = float32(mu), float32(max(e2-mu*mu, 0))
	}
	return mean, variance, nil
}

// clipScale is min(1, clip/‖v‖) for ‖v‖² = norm2: exact clipping, without
// the 10⁻⁶ of DP-SGD's ClipFactor.
func clipScale(norm2, clip float64) float64 {
	if n := math.Sqrt(norm2); n > clip {
		return clip / n
	}
	return 1
}

// dataNormLayer returns net's datanorm layer, if it has one.
func dataNormLayer(net *model.Net) (model.Layer, bool) {
	for _, l := range net.Layers {
		if _, ok := l.Kind.(model.DataNormSpec); ok {
			return l, true
		}
	}
	return model.Layer{}, false
}

// DataNormEstimate is a datanorm layer's statistics estimated once and
// released (EstimateDataNorm), the layer's Estimate: a public input of
// every run given it (Config.Released), which copies it into the layer's
// buffers instead of estimating its own. Using it is post-processing of
// the estimate; its cost, DataNorm.Event, is counted once by whoever
// released it, never by the runs.
type DataNormEstimate struct {
	Mean     []float32 `json:"mean"`     // μ_c per channel
	Variance []float32 `json:"variance"` // v_c ≥ 0 per channel
}

// Validate returns an error unless the estimate has as many means as
// variances, at least one, every mean finite and every variance finite and
// non-negative.
func (e DataNormEstimate) Validate() error {
	if len(e.Mean) == 0 || len(e.Mean) != len(e.Variance) {
		return fmt.Errorf("released data normalisation: %d means and %d variances", len(e.Mean), len(e.Variance))
	}
	for c := range e.Mean {
		m, v := float64(e.Mean[c]), float64(e.Variance[c])
		if math.IsNaN(m) || math.IsInf(m, 0) || !(v >= 0) || math.IsInf(v, 1) {
			return fmt.Errorf("released data normalisation: channel %d has mean %v and variance %v", c, m, v)
		}
	}
	return nil
}

// EstimateDataNorm estimates the statistics of arch's datanorm layer once
// on train (the network's input: a front end's features when it has one),
// with mechanism d — DataNormStats at nominal size nominalN, the noise
// from the "datanorm" stream of seed or key (randsrc.For), drawn securely
// when secure — and returns them to be released: its privacy cost is
// d.Event(), the caller's to count once. A run of a network with the same
// datanorm layer then takes it released (Config.Released).
func EstimateDataNorm(ctx context.Context, arch model.Arch, train *data.Dataset, d DataNorm, nominalN float64, seed *uint64, key *randsrc.Key, secure bool) (*DataNormEstimate, error) {
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("dpsgd: %w", err)
	}
	net, err := model.NewZero(arch)
	if err != nil {
		return nil, err
	}
	l, ok := dataNormLayer(net)
	if !ok {
		return nil, fmt.Errorf("dpsgd: network %s has no datanorm layer to estimate", arch.Name)
	}
	mean, variance, err := DataNormStats(ctx, train.X, train.N, l.In, l.InH*l.InW, d, nominalN, secure, randsrc.For(seed, key, "datanorm"))
	if err != nil {
		return nil, err
	}
	return &DataNormEstimate{Mean: mean, Variance: variance}, nil
}

// copyDataNormEstimate copies a released estimate into the buffers of
// net's datanorm layer l.
func copyDataNormEstimate(net *model.Net, l model.Layer, e DataNormEstimate) error {
	if len(e.Mean) != l.In || len(e.Variance) != l.In {
		return fmt.Errorf("dpsgd: the released data normalisation has %d means and %d variances; network %s's datanorm layer has %d channels", len(e.Mean), len(e.Variance), net.Arch.Name, l.In)
	}
	copy(net.Buffers[l.BufferOffset:], e.Mean)
	copy(net.Buffers[l.BufferOffset+l.In:], e.Variance)
	return nil
}

// estimate implements Mechanism: DataNormStats of the layer's input,
// noiseless with σ = 0.
func (d DataNorm) estimate(ctx context.Context, net *model.Net, l model.Layer, train *data.Dataset, nominalN float64, noiseless, secure bool, rng *rand.Rand) error {
	if noiseless {
		d.NoiseMultiplier = 0
	}
	mean, variance, err := DataNormStats(ctx, train.X, train.N, l.In, l.InH*l.InW, d, nominalN, secure, rng)
	if err != nil {
		return err
	}
	copy(net.Buffers[l.BufferOffset:], mean)
	copy(net.Buffers[l.BufferOffset+l.In:], variance)
	return nil
}

// release implements Mechanism: copyDataNormEstimate of a
// DataNormEstimate.
func (DataNorm) release(net *model.Net, l model.Layer, e Estimate) error {
	switch est := e.(type) {
	case *DataNormEstimate:
		if est != nil {
			return copyDataNormEstimate(net, l, *est)
		}
	case DataNormEstimate:
		return copyDataNormEstimate(net, l, est)
	}
	return fmt.Errorf("dpsgd: network %s's datanorm layer takes a released data normalisation, not %T", net.Arch.Name, e)
}
