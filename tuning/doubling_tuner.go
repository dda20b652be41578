package tuning

import (
	"context"
	"fmt"

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
