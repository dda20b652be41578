package audit

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/model/features"
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

// For a network with a scatter front end the protocol runs in the
// network's input space: a base set of features and the canary image's
// features (the transform of CheckerCanary) train and score, and the
// canary is still fitted better with it than without; an image-space
// canary is refused, not fed to the network.
func TestNaturalCanaryOnFeatures(t *testing.T) {
	spec := model.Spec{Name: "tiny-scatter", Layers: []model.LayerSpec{model.Scatter(1, 2), model.GroupNorm(3), model.Flatten(), model.Linear(10)}}
	arch, err := model.NewArch(spec, 1, 8, 8, 10)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := arch.FrontEnd()
	if !ok {
		t.Fatal("no front end")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	images := &data.Dataset{Name: "random", N: 30, C: 1, H: 8, W: 8, Classes: 10, X: make([]float32, 30*64), Y: make([]uint8, 30)}
	for i := range images.X {
		images.X[i] = float32(rng.NormFloat64())
	}
	for i := range images.Y {
		images.Y[i] = uint8(1 + rng.IntN(9))
	}
	base, err := features.Compute(context.Background(), f, images, nil)
	if err != nil {
		t.Fatal(err)
	}
	checker := CheckerCanary(arch)
	z, err := features.Compute(context.Background(), f, &data.Dataset{Name: "canary", X: checker, Y: []uint8{0}, N: 1, C: 1, H: 8, W: 8, Classes: 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := NaturalCanary{Arch: arch, Base: base, Image: z.X, Label: 0, NoiseMultiplier: 1e-6, ClipNorm: 1, SamplingRate: 1, Steps: 5, LearningRate: 0.5}
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
	p.Image = checker
	if _, err := p.Trial(context.Background(), 1, rand.New(rand.NewPCG(0, 9))); err == nil {
		t.Error("an image-space canary for a network that reads features: no error")
	}
	p.Image, p.Base = z.X, images
	if _, err := p.Trial(context.Background(), 0, rand.New(rand.NewPCG(0, 9))); err == nil {
		t.Error("a base set of images for a network that reads features: no error")
	}
}
