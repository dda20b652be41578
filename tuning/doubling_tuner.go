package tuning

import (
	"context"
	"fmt"
	"math"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// DoublingTuner is Ding et al.'s constant-overhead tuner (Algorithm 1) with
// an unconditional guarantee: utilities by subsample and aggregate (Scorer),
// the capped doubling search (DoublingSearch), then one DP-SGD run of the
// selected candidate on the whole training set.
type DoublingTuner struct {
	Space  Space
	Scorer *PartitionScorer
	Search DoublingConfig
	// Final is the final DP-SGD run without its candidate's learning rate
	// and clipping norm, which the search fills in.
	Final dpsgd.Config
	Train *data.Dataset
	Arch  model.Arch
	Seed  *uint64
	// Key, if not nil, is a durable runner's secret 256-bit invocation key,
	// taking precedence over Seed: the search draws from its stream
	// "doubling search" and the final run from Key.Derive("final run").
	Key *randsrc.Key
}

// DoublingResult adds the search's realised iterations (curator-side: the
// guarantee counts the cap, so T is not secret, but it is data-dependent and
// the report shows it only labelled as such).
type DoublingResult struct {
	Result
	Iterations int         // realised T
	Trace      []Iteration // every iteration (u, step, accepted)
	Fallback   bool        // no candidate passed: the first candidate was used
	FinalSteps int         // steps the final run completed
	// EarlierSearches are the searches the score cache had already served:
	// each composes with this one (charge them to a budget file).
	EarlierSearches []SearchRecord
}

// SearchLedger is the cost of scoring and searching, known before either
// runs: the partition runs (only when they are DP-SGD runs, at the scorer's
// nominal sampling rate; non-private part runs are covered by the search's
// Laplace noise, Lemma 2) and the search (accounting.AboveThreshold at the
// cap).
func (d *DoublingTuner) SearchLedger() accounting.Ledger {
	var l accounting.Ledger
	if s := d.Scorer; s.Private {
		l.Add(fmt.Sprintf("partition runs: DP-SGD on each of %d disjoint parts, %d candidates each", len(s.Parts), d.Space.Size()),
			accounting.SelfComposed{Event: accounting.DPSGD(s.NoiseMultiplier, s.SamplingRate, dpsgd.StepsForEpochs(s.Epochs, s.SamplingRate)), Count: d.Space.Size()})
	}
	l.Add(fmt.Sprintf("doubling search: at most %d AboveThreshold iterations, ϵ = %g each", d.Search.MaxIterations, d.Search.Epsilon0),
		accounting.AboveThreshold{Epsilon: d.Search.IterationEpsilon(), MaxIterations: d.Search.MaxIterations})
	return l
}

// Run scores, searches and trains. The ledger has three entries: the
// partition runs (only when they are DP-SGD runs; non-private part runs are
// covered by the search's Laplace noise, Lemma 2), the search
// (accounting.AboveThreshold at the cap) and the final run.
func (d *DoublingTuner) Run(ctx context.Context) (DoublingResult, error) {
	var res DoublingResult
	if err := d.Search.Check(); err != nil {
		return res, err
	}
	if err := d.Space.Check(); err != nil {
		return res, err
	}
	if d.Search.Partitions != len(d.Scorer.Parts) {
		return res, fmt.Errorf("tuning: search expects %d partitions, scorer has %d", d.Search.Partitions, len(d.Scorer.Parts))
	}
	for _, e := range d.SearchLedger().Entries {
		res.Ledger.Add(e.Label, e.Event)
	}
	earlier, err := d.Scorer.Searches()
	if err != nil {
		return res, err
	}
	res.EarlierSearches = earlier
	u, _, err := d.Scorer.Scores(ctx, d.Space)
	if err != nil {
		return res, err
	}
	sel, T, err := DoublingSearch(u, d.Search, randsrc.For(d.Seed, d.Key, "doubling search"), false, func(it Iteration) { res.Trace = append(res.Trace, it) })
	if err != nil {
		return res, err
	}
	if err := d.Scorer.RecordSearch(SearchRecord{Epsilon0: d.Search.Epsilon0, Granularity: d.Search.Granularity, U0: d.Search.U0,
		MaxIterations: d.Search.MaxIterations, Epsilon: float64(d.Search.MaxIterations) * d.Search.IterationEpsilon()}); err != nil {
		return res, err
	}
	res.Iterations = T
	if sel < 0 {
		sel, res.Fallback = 0, true
	}
	c := d.Space.At(sel)
	res.Selected = &c
	cfg := d.Final
	cfg.LearningRate, cfg.ClipNorm, cfg.Seed = c.Values[LearningRate], c.Values[ClipNorm], d.Seed
	initRNG := randsrc.New(d.Seed, "final init")
	if d.Key != nil {
		cfg.Seed, cfg.Key = nil, d.Key.Derive("final run")
		initRNG = cfg.Key.Stream("init")
	}
	net, err := model.New(d.Arch, initRNG)
	if err != nil {
		return res, err
	}
	final, err := dpsgd.Train(ctx, net, d.Train, cfg, nil, nil)
	res.Ledger.Add("final DP-SGD run with the selected candidate", final.Event)
	res.FinalSteps = final.Steps
	if err == nil {
		res.Model = net
	}
	return res, err
}

// DoublingOptions are the doubling tuner's settings (its Options).
type DoublingOptions struct {
	Partitions    int     // k disjoint parts of the training data
	Epsilon0      float64 // ϵ of one search iteration, nats
	Granularity   float64 // utility granularity g
	U0            float64 // utility lower bound u₀
	MaxIterations int     // the cap T_max; 0: DefaultMaxIterations
	PartEpochs    int     // epochs of each part run
	// Private trains the parts with DP-SGD at PartitionNoise (counted);
	// otherwise they are clipped without noise, covered by the search's
	// Laplace noise (Lemma 2).
	Private        bool
	PartitionNoise float64
	// Cache is the curator-only file of finished part scores (NOT PRIVATE,
	// mode 0600), reused by a rerun with the same seed and settings; "" for
	// none.
	Cache string
}

// Values returns o as the doubling tuner's Spec.Options.
func (o DoublingOptions) Values() Values {
	return Values{"partitions": o.Partitions, "epsilon0": o.Epsilon0, "granularity": o.Granularity, "u0": o.U0,
		"max-iterations": o.MaxIterations, "private-partitions": o.Private, "partition-noise": o.PartitionNoise,
		"part-epochs": o.PartEpochs, "cache": o.Cache}
}

// DoublingOptionsOf returns the doubling tuner's options in s.
func DoublingOptionsOf(s Spec) DoublingOptions {
	var d doublingTuner
	return DoublingOptions{Partitions: value[int](s, d, "partitions"), Epsilon0: value[float64](s, d, "epsilon0"),
		Granularity: value[float64](s, d, "granularity"), U0: value[float64](s, d, "u0"), MaxIterations: value[int](s, d, "max-iterations"),
		PartEpochs: value[int](s, d, "part-epochs"), Private: value[bool](s, d, "private-partitions"),
		PartitionNoise: value[float64](s, d, "partition-noise"), Cache: value[string](s, d, "cache")}
}

// NewDoubling returns the doubling tuner of s without its data, seed and
// final noise multiplier: the search (with the default cap when none is
// given), the partition scorer's settings at the nominal part size
// s.TrainN/k, and the final run's at s.TrainN.
func NewDoubling(s Spec, arch model.Arch) *DoublingTuner {
	o := DoublingOptionsOf(s)
	if o.MaxIterations == 0 {
		o.MaxIterations = DefaultMaxIterations(o.U0, o.Granularity)
	}
	search := DoublingConfig{Partitions: o.Partitions, Epsilon0: o.Epsilon0, Granularity: o.Granularity, U0: o.U0, MaxIterations: o.MaxIterations}
	var partQ float64
	if o.Partitions > 0 && s.TrainN/o.Partitions > 0 {
		partQ = float64(s.BatchSize) / float64(s.TrainN/o.Partitions)
	}
	q := float64(s.BatchSize) / float64(s.TrainN)
	scorer := &PartitionScorer{Arch: arch, ValSize: s.ValSize, Epochs: o.PartEpochs, BatchSize: s.BatchSize, SamplingRate: partQ,
		Momentum: s.Momentum, Private: o.Private, NoiseMultiplier: o.PartitionNoise, Cache: o.Cache}
	return &DoublingTuner{Space: s.Space, Search: search, Arch: arch, Seed: s.Seed, Scorer: scorer,
		Final: dpsgd.Config{SamplingRate: q, ExpectedBatchSize: float64(s.BatchSize), Steps: dpsgd.StepsForEpochs(s.Epochs, q), Momentum: s.Momentum}}
}

// doublingTuner is the "doubling" tuner: DoublingTuner, with
// DoublingOptions as its options.
type doublingTuner struct{}

func (doublingTuner) Name() string { return "doubling" }
func (doublingTuner) Summary() string {
	return "Ding et al.: every candidate trained on k disjoint parts, a capped doubling AboveThreshold search, one final DP-SGD run"
}
func (doublingTuner) Options() []Option {
	return []Option{
		{Name: "partitions", Default: 10, Help: "number k of disjoint training parts"},
		{Name: "epsilon0", Default: 0.1, Help: "ϵ in nats of one search iteration"},
		{Name: "granularity", Default: 0.01, Help: "utility granularity g"},
		{Name: "u0", Default: 0.0, Help: "utility lower bound u₀"},
		{Name: "max-iterations", Default: 0, Help: "iteration cap T_max (default ⌈5·log₂((1−u₀)/g)⌉)"},
		{Name: "private-partitions", Default: false, Help: "train the parts with DP-SGD (default: clipped, without noise)"},
		{Name: "partition-noise", Default: 1.0, Help: "noise multiplier of private part runs"},
		{Name: "part-epochs", Default: 3, Help: "epochs of each part run"},
		{Name: "cache", Default: "", Help: "file of finished part scores, reused on a rerun (default: OUT/partition-scores.csv)", CuratorFile: "partition-scores.csv"},
	}
}
func (doublingTuner) Uses() Uses { return Uses{} }

// Check refuses search settings outside Algorithm 1's domain, any
// accountant but rdp, fewer validation examples than parts (a score's
// sensitivity 1/n_val would exceed 1/k), parts smaller than a batch, a
// non-finite partition noise and part epochs a part cannot hold.
func (doublingTuner) Check(s Spec) error {
	o := DoublingOptionsOf(s)
	d := NewDoubling(s, model.Arch{})
	if err := d.Search.Check(); err != nil {
		return invalid(err)
	}
	switch {
	case s.Accountant != "" && s.Accountant != "rdp":
		return invalidf("the doubling tuner is counted by the rdp accountant only, not %s", s.Accountant)
	case s.ValSize < o.Partitions:
		return invalidf("validation size %d is smaller than the %d partitions: a score's sensitivity 1/n_val would exceed 1/k", s.ValSize, o.Partitions)
	case s.BatchSize < 1 || o.Partitions > s.TrainN/s.BatchSize:
		return invalidf("%d partitions leave fewer than the batch size %d examples per part", o.Partitions, s.BatchSize)
	case o.Private && (!(o.PartitionNoise > 0) || math.IsInf(o.PartitionNoise, 1)):
		return invalidf("partition noise multiplier %v must be positive and finite", o.PartitionNoise)
	}
	if err := dpsgd.CheckEpochs(o.PartEpochs, d.Scorer.SamplingRate); err != nil {
		return invalidf("part epochs %d: %v", o.PartEpochs, err)
	}
	return nil
}

func (doublingTuner) Accountant(Spec) accounting.Accountant { return accounting.RDP{} }

// Event is the search's cost at its cap (and the private part runs') and
// the final run, base.
func (doublingTuner) Event(base accounting.Event, s Spec) accounting.Event {
	search := NewDoubling(s, model.Arch{}).SearchLedger()
	return accounting.Composed{Events: []accounting.Event{search.Event(), base}}
}
func (doublingTuner) Label(Spec) string     { return "final DP-SGD run with the selected candidate" }
func (doublingTuner) Partitions(s Spec) int { return DoublingOptionsOf(s).Partitions }

// Shortfall says what the search alone spends: nothing is left for the
// final run.
func (doublingTuner) Shortfall(s Spec, delta float64) string {
	d := NewDoubling(s, model.Arch{})
	l := d.SearchLedger()
	over, _ := l.Spent(accounting.RDP{}, delta)
	return fmt.Sprintf("the search alone (at most %d iterations of ϵ = %g) spends ε = %.4f at δ = %g, leaving nothing for the final run",
		d.Search.MaxIterations, d.Search.Epsilon0, over.Epsilon, delta)
}
