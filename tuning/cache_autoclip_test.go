package tuning

import (
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
)

// A part-score cache is keyed by the clipping rule: automatic clipping (and
// each stability constant) has a header of its own, and a flat scorer's
// header does not mention clipping, so flat caches written before keep
// theirs.
func TestCacheHeaderKeysClipping(t *testing.T) {
	s := Space{Name: "lr", Dims: []Dim{{Name: LearningRate, Values: []float64{0.1, 1}}}}
	p := &PartitionScorer{Arch: model.MNIST, Val: &data.Dataset{N: 100}, ValSize: 100, Epochs: 1, BatchSize: 10, SamplingRate: 0.1, ClipNorm: 1}
	flat := p.fingerprint(s)
	p.Clipping, p.AutoClipGamma = dpsgd.AutomaticClipping, 0.01
	auto := p.fingerprint(s)
	p.AutoClipGamma = 0.02
	other := p.fingerprint(s)
	if flat == auto || auto == other {
		t.Errorf("headers: flat %q, automatic γ = 0.01 %q, γ = 0.02 %q", flat, auto, other)
	}
}
