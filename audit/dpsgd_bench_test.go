package audit

import (
	"context"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// One trial of the worst-case DP-SGD game (X = ∅, τ = 1, 50 steps) on the
// MNIST network and on the audit's own tiny network.
func BenchmarkDPSGDCanaryTrial(b *testing.B) {
	for _, c := range []struct {
		name string
		arch model.Arch
	}{{"opacus-mnist", model.MNIST}, {"canary", CanaryArch}} {
		b.Run(c.name, func(b *testing.B) {
			p := DPSGDCanary{Arch: c.arch, Size: 1, NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: 1, Steps: 50}
			rng := randsrc.Seeded(1, "bench")
			for i := 0; i < b.N; i++ {
				if _, err := p.Trial(context.Background(), i%2, rng); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
