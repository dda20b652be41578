package dpsgd

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// Mechanism is how a privacy-spending stage estimates its layer's buffers
// from the training set before the first step (DataNorm for a datanorm
// layer): what the layer's engine rule says it spends (rule.spend). A
// mechanism is a comparable value: two layers with equal mechanisms
// estimate the same statistics the same way, so that one released
// estimate serves both.
type Mechanism interface {
	// Cost is the estimate's privacy event on a training set of nominal
	// size nominalN, or 0 when the caller's config leaves the expected
	// batch size to the data (PlannedEvent).
	Cost(nominalN float64) accounting.Event
	// Label says what the estimate is, as a ledger labels its entry.
	Label() string
	// Sigma is the noise multiplier of the estimate's Gaussian noise, as a
	// report states it beside the estimate's ε.
	Sigma() float64
	// estimate fills layer l's buffers in net with the estimate on train
	// (the network's input), at nominal size nominalN, without noise when
	// noiseless (a non-private run), its noise drawn from rng, securely
	// when secure. It stops with ctx's error when ctx is cancelled.
	estimate(ctx context.Context, net *model.Net, l model.Layer, train *data.Dataset, nominalN float64, noiseless, secure bool, rng *rand.Rand) error
	// release copies e, this mechanism's estimate released before the
	// run, into layer l's buffers in net; an estimate of another kind or
	// size is an error.
	release(net *model.Net, l model.Layer, e Estimate) error
}

// Estimate is a privacy-spending stage's statistics, estimated once and
// released before the runs that take them (Config.Released):
// *DataNormEstimate for a datanorm layer.
type Estimate interface {
	// Validate returns an error unless the statistics can be a layer's.
	Validate() error
}

// Released is the statistics of a network's privacy-spending stages
// estimated once and released before a run (EstimateDataNorm): a public
// input whose use is post-processing, its cost counted once by whoever
// released it (a tuning, for all its runs), never by the run.
type Released struct {
	// Estimates holds one estimate per stage, in the order of Stages; it
	// is empty until they are released, and Train refuses a run then.
	Estimates []Estimate
}

// Stage is a privacy-spending stage of a network: a layer whose engine
// rule estimates its buffers from the training set before the first step
// (a datanorm layer's per-channel mean and variance), so that a private
// run spends privacy beside its steps.
type Stage struct {
	Layer     int    // the layer's index in the spec (model.Spec.Layers)
	Type      string // the layer's type ("datanorm")
	Mechanism Mechanism
}

// Stages returns the privacy-spending stages of arch, in layer order (nil
// when it has none): the one question every caller asks of a network's
// layers. A caller that cannot count the stages — partition runs, whose
// ledger counts only the search; the vote's clients, which would estimate
// on their own data — refuses a network that has one.
func Stages(arch model.Arch) []Stage {
	var out []Stage
	for i, s := range arch.Spec.Layers {
		if m := spendOf(s.Kind); m != nil {
			out = append(out, Stage{Layer: i, Type: s.Kind.Type(), Mechanism: m})
		}
	}
	return out
}

// spendOf is the mechanism of a layer of kind k, nil for a layer that
// spends nothing.
func spendOf(k model.LayerKind) Mechanism {
	if k == nil {
		return nil
	}
	if r, ok := rules[k.Type()]; ok && r.spend != nil {
		return r.spend(k)
	}
	return nil
}

// OwnStages returns the stages of arch that a run of cfg estimates itself:
// all of them (without noise when the run is non-private), or none when
// cfg takes them released (cfg.Released).
func OwnStages(arch model.Arch, cfg Config) []Stage {
	if cfg.Released != nil {
		return nil
	}
	return Stages(arch)
}

// PlannedStages is the ledger of the stages a private run of cfg on arch
// spends on before its first step, one entry per stage labelled by its
// mechanism, at the nominal size cfg states (nominalSize); empty for a
// non-private run or one that takes them released.
func PlannedStages(arch model.Arch, cfg Config) accounting.Ledger {
	var l accounting.Ledger
	if cfg.NonPrivate {
		return l
	}
	n := nominalSize(cfg)
	for _, s := range OwnStages(arch, cfg) {
		l.Add(s.Mechanism.Label(), s.Mechanism.Cost(n))
	}
	return l
}

// StagesEvent is the event of PlannedStages: nil when it is empty, the one
// stage's event, or their composition.
func StagesEvent(arch model.Arch, cfg Config) accounting.Event {
	return ledgerEvent(PlannedStages(arch, cfg))
}

// ledgerEvent is nil for an empty ledger, the event of a ledger of one
// entry, else the composition of its events.
func ledgerEvent(l accounting.Ledger) accounting.Event {
	switch len(l.Entries) {
	case 0:
		return nil
	case 1:
		return l.Entries[0].Event
	}
	return l.Event()
}

// nominalSize is the training set's nominal size a config states,
// ExpectedBatchSize/SamplingRate, or 0 when it leaves the expected batch
// size to the data.
func nominalSize(cfg Config) float64 {
	if cfg.ExpectedBatchSize > 0 && cfg.SamplingRate > 0 {
		return cfg.ExpectedBatchSize / cfg.SamplingRate
	}
	return 0
}

// runStages fills the buffers of net's privacy-spending stages before the
// first step: from cfg.Released when the run takes them released, else
// by each stage's estimate on train at the run's nominal size (the
// expected batch size over q, or train.N when the config leaves it to the
// data), without noise for a non-private run, each stage's noise from the
// run's stream named after its layer's type ("datanorm"). It reports
// whether an estimate touched the data.
func runStages(ctx context.Context, net *model.Net, train *data.Dataset, cfg Config, secure bool) (bool, error) {
	var stages []model.Layer
	var mechs []Mechanism
	for _, l := range net.Layers {
		if m := spendOf(l.Kind); m != nil {
			stages, mechs = append(stages, l), append(mechs, m)
		}
	}
	if r := cfg.Released; r != nil {
		switch {
		case len(r.Estimates) == 0 && len(stages) > 0:
			return false, fmt.Errorf("dpsgd: the config takes the statistics of network %s's %s layer released, but none were (not yet estimated)", net.Arch.Name, stages[0].Kind.Type())
		case len(r.Estimates) != len(stages):
			return false, fmt.Errorf("dpsgd: the config holds %d released estimates, but network %s has %d privacy-spending layers", len(r.Estimates), net.Arch.Name, len(stages))
		}
		for i, l := range stages {
			if err := mechs[i].release(net, l, r.Estimates[i]); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	if len(stages) == 0 {
		return false, nil
	}
	nominal := float64(train.N)
	if n := nominalSize(cfg); n > 0 {
		nominal = n
	}
	seen := map[string]int{}
	for i, l := range stages {
		stream := l.Kind.Type()
		if k := seen[stream]; k > 0 {
			stream = fmt.Sprintf("%s %d", stream, k)
		}
		seen[l.Kind.Type()]++
		rng := randsrc.For(cfg.Seed, cfg.Key, stream)
		if err := mechs[i].estimate(ctx, net, l, train, nominal, cfg.NonPrivate, secure, rng); err != nil {
			return true, err
		}
	}
	return true, nil
}
