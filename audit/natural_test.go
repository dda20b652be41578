package audit

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
)

// With almost no noise, a model trained with the checkerboard canary fits it
// better than one trained without: the statistic (−loss on z) is larger on
// X′ in every paired trial — the protocol's plumbing is right.
func TestNaturalCanarySeparatesWithoutNoise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	base := &data.Dataset{Name: "random", N: 30, C: 1, H: 28, W: 28, Classes: 10, X: make([]float32, 30*784), Y: make([]uint8, 30)}
	for i := range base.X {
		base.X[i] = float32(rng.NormFloat64())
	}
	for i := range base.Y {
		base.Y[i] = uint8(1 + rng.IntN(9)) // never the canary's label 0
	}
	p := NaturalCanary{Arch: model.MNIST, Base: base, Image: CheckerCanary(model.MNIST), Label: 0,
		NoiseMultiplier: 1e-6, ClipNorm: 1, SamplingRate: 1, Steps: 5, LearningRate: 0.5}
	for trial := range 3 {
		s0, err := p.Trial(context.Background(), 0, rand.New(rand.NewPCG(uint64(trial), 9)))
		if err != nil {
			t.Fatal(err)
		}
		s1, err := p.Trial(context.Background(), 1, rand.New(rand.NewPCG(uint64(trial), 9)))
		if err != nil {
			t.Fatal(err)
		}
		if !(s1 > s0) {
			t.Errorf("trial %d: −loss on z %v with it, %v without", trial, s1, s0)
		}
	}
}
