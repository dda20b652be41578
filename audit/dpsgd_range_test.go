package audit

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// At the corner of the ranges Check allows — the largest clipping norm and
// noise multiplier, the smallest sampling rate, one example — a trial's
// parameters stay finite (the bound MaxCanaryClipNorm documents), and just
// outside the ranges Check refuses.
func TestDPSGDCanaryRanges(t *testing.T) {
	p := DPSGDCanary{Arch: model.MNIST, Size: 1, NoiseMultiplier: accounting.MaxNoiseMultiplier,
		ClipNorm: MaxCanaryClipNorm, SamplingRate: MinCanarySamplingRate, Steps: 3}
	if err := p.Check(); err != nil {
		t.Fatal(err)
	}
	for b := range 2 {
		stat, err := p.Trial(context.Background(), b, rand.New(rand.NewPCG(1, uint64(b))))
		if err != nil || math.IsNaN(stat) || math.IsInf(stat, 0) {
			t.Errorf("b = %d at the corner: statistic %v, %v", b, stat, err)
		}
	}
	over := p
	over.ClipNorm = math.Nextafter(MaxCanaryClipNorm, math.Inf(1))
	under := p
	under.SamplingRate = math.Nextafter(MinCanarySamplingRate, 0)
	for _, q := range []DPSGDCanary{over, under} {
		if err := q.Check(); err == nil {
			t.Errorf("C = %v, τ = %v accepted", q.ClipNorm, q.SamplingRate)
		}
	}
}
