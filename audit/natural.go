package audit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// NaturalCanary audits one DP-SGD run with an input-space canary (Xiang et
// al.'s NTNV-style setting, §4): X is Base, a real data subset, and X′ is
// Base with the canary z — an out-of-distribution image (Image) with the
// fixed label Label — appended. Base and Image are in the network's input
// space, Arch.Input(): C×H×W images, or, for a network with a fixed front
// end (a scatter first layer, model.Arch.FrontEnd), the front end's
// features of the base images and of the canary image (the transform is
// data-independent, so the audited run is DP-SGD on the features). Training is the real dpsgd.Train path
// with the real per-sample engine; the adversary (black-box) sees only the
// final model and its statistic is minus the model's cross-entropy loss on
// z (a model trained with z fits it better). It reports the realistic ε_L
// of a natural canary, far below the worst case.
type NaturalCanary struct {
	Arch            model.Arch
	Base            *data.Dataset
	Image           []float32
	Label           uint8
	NoiseMultiplier float64
	ClipNorm        float64
	SamplingRate    float64
	Steps           int
	LearningRate    float64
}

// Trial trains on X (b = 0) or X′ (b = 1) and returns −loss(z).
func (p NaturalCanary) Trial(ctx context.Context, b int, rng *rand.Rand) (float64, error) {
	c, h, w := p.Arch.Input()
	if p.Base == nil || p.Base.N < 1 || len(p.Image) != c*h*w || len(p.Base.X) != p.Base.N*c*h*w || int(p.Label) >= p.Arch.Classes {
		return 0, fmt.Errorf("audit: the natural canary needs a base set and an image of the network's input shape (%d×%d×%d) with a valid label", c, h, w)
	}
	set := p.Base
	if b == 1 {
		set = withCanary(p.Base)
		copy(set.X[p.Base.N*len(p.Image):], p.Image)
		set.Y[p.Base.N] = p.Label
	}
	seed := rng.Uint64()
	net, err := model.New(p.Arch, randsrc.Seeded(seed, "init"))
	if err != nil {
		return 0, err
	}
	cfg := dpsgd.Config{NoiseMultiplier: p.NoiseMultiplier, ClipNorm: p.ClipNorm, SamplingRate: p.SamplingRate, Steps: p.Steps,
		ExpectedBatchSize: p.SamplingRate * float64(p.Base.N), LearningRate: p.LearningRate, Seed: &seed, Noise: dpsgd.NoiseFast}
	if _, err := dpsgd.Train(ctx, net, set, cfg, nil, nil); err != nil {
		return 0, err
	}
	m, err := dpsgd.Evaluate(ctx, net, p.Image, []uint8{p.Label})
	if err != nil {
		return 0, err
	}
	if math.IsNaN(m.Loss) {
		return 0, fmt.Errorf("audit: the canary's loss is NaN")
	}
	return -m.Loss, nil
}

// CheckerCanary is an out-of-distribution image for arch: a checkerboard of
// extreme values (±3 after normalisation), nothing like a digit or a photo.
func CheckerCanary(a model.Arch) []float32 {
	img := make([]float32, a.C*a.H*a.W)
	for c := 0; c < a.C; c++ {
		for y := 0; y < a.H; y++ {
			for x := 0; x < a.W; x++ {
				v := float32(3)
				if (x/4+y/4)%2 == 1 {
					v = -3
				}
				img[(c*a.H+y)*a.W+x] = v
			}
		}
	}
	return img
}

// The natural game, registered as "natural": one NaturalCanary run on the
// caller's real data with CheckerCanary as z. Its claims are RDP and PLD
// of the run.
func init() {
	Register(Game{Name: "natural", Rank: 5,
		Help: "one DP-SGD run on --size real training examples with an\nout-of-distribution checkerboard canary; statistic = −loss\n" +
			"on it (the realistic, black-box ε_L); a --model with a\nscatter front end trains on the features of both",
		Fields: append(slices.Clip(dpsgdFields), "LearningRate"),
		Data:   DataRequired, Image: CheckerCanary, DPSGD: true, Bounds: dpsgdBounds,
		Check: func(s Settings) error {
			if s.BaseEpsilon == 0 && !(s.NoiseMultiplier > 0 && s.NoiseMultiplier <= accounting.MaxNoiseMultiplier) {
				return invalidf("noise multiplier %v is outside (0, %g]", s.NoiseMultiplier, accounting.MaxNoiseMultiplier)
			}
			return nil
		},
		New: func(s Settings) (Protocol, Claims, error) {
			run := dpsgd.PlannedEvent(s.Arch, dpsgd.Config{NoiseMultiplier: s.NoiseMultiplier, SamplingRate: s.SamplingRate, Steps: s.Steps})
			return NaturalCanary{Arch: s.Arch, Base: s.Base, Image: s.Image, Label: 0, NoiseMultiplier: s.NoiseMultiplier,
				ClipNorm: s.ClipNorm, SamplingRate: s.SamplingRate, Steps: s.Steps, LearningRate: s.LearningRate}, Claims{"rdp": run, "pld": run}, nil
		},
	})
}
