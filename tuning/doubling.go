package tuning

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// CappedSearchConfig are the parameters of the doubling search, a capped
// AboveThreshold search (Ding et al.,
// "Revisiting Hyperparameter Tuning with Differential Privacy" / "Constant-
// overhead DP tuning", Algorithm 1).
type CappedSearchConfig struct {
	Partitions    int     // k: the utilities are means over k disjoint parts (sensitivity 1/k, Lemma 2)
	Epsilon0      float64 // ϵ: the privacy of one iteration
	Granularity   float64 // g: utility step unit, in (0, 1)
	U0            float64 // u₀: utility lower bound, in [0, 1)
	MaxIterations int     // T_max: the cap, fixed before the data is seen
}

// Check returns an error for parameters outside the algorithm's domain.
func (c CappedSearchConfig) Check() error {
	switch {
	case c.Partitions < 1:
		return fmt.Errorf("tuning: %d partitions", c.Partitions)
	case !(c.Epsilon0 > 0) || math.IsInf(c.Epsilon0, 1):
		return fmt.Errorf("tuning: per-iteration ϵ = %v must be positive and finite", c.Epsilon0)
	case !(c.Granularity >= 1e-9 && c.Granularity < 1):
		return fmt.Errorf("tuning: granularity g = %v is outside [1e-9, 1)", c.Granularity)
	case !(c.U0 >= 0 && c.U0 < 1):
		return fmt.Errorf("tuning: u₀ = %v is outside [0, 1)", c.U0)
	case c.MaxIterations < 1:
		return fmt.Errorf("tuning: iteration cap %d must be at least 1", c.MaxIterations)
	}
	return nil
}

// DefaultMaxIterations is the cap T_max = ⌈5·log₂ n⌉ with n = (1 − u₀)/g,
// at least 1. Ding et al.'s Figure 4 finds T ≈ 3·log n iterations in
// practice, with multipliers between 1 and 5; we cap at the top of that range
// so the cap rarely binds, and account the cap, not the realised T.
func DefaultMaxIterations(u0, g float64) int {
	n := (1 - u0) / g
	return max(1, int(math.Ceil(5*math.Log2(math.Max(n, 2)))))
}

// Iteration is one iteration of the search, for the curator's trace and the
// paper's figures.
type Iteration struct {
	T        int     `json:"t"`
	U        float64 `json:"u"`        // u after the iteration
	Step     int     `json:"step"`     // step after the iteration
	Accepted int     `json:"accepted"` // candidate accepted, −1 if none
}

// CappedSearch runs the doubling AboveThreshold loop of Algorithm 1 (lines
// 12–34) on the utilities u_s (each a mean over the k parts, in [0, 1]),
// candidates in their public order: threshold û = u + step·g + Lap(2/(kϵ));
// the first candidate with u_s + Lap(4/(kϵ)) ≥ û is recorded as s*, u grows
// by step·g and step doubles; if none passes, step halves (⌊step/2⌋). It
// stops when step = 0, u ≥ 1, or after cfg.MaxIterations iterations,
// whatever happens — the cap makes the guarantee unconditional:
// MaxIterations·ϵ·EpsilonFactor pure DP (accounting.AboveThreshold).
//
// The noise is GridLaplace from rng; noiseless runs the paper's
// "non-randomized world" (Definition 5). It returns s* (−1 if no candidate
// ever passed), the realised number of iterations T, and, if trace is not
// nil, calls it after each iteration.
func CappedSearch(u []float64, cfg CappedSearchConfig, rng *rand.Rand, noiseless bool, trace func(Iteration)) (sel, T int, err error) {
	if err := cfg.Check(); err != nil {
		return -1, 0, err
	}
	if len(u) == 0 {
		return -1, 0, fmt.Errorf("tuning: no candidates")
	}
	k := float64(cfg.Partitions)
	thr, err := NewGridLaplace(2 / (k * cfg.Epsilon0))
	if err != nil {
		return -1, 0, err
	}
	cand, _ := NewGridLaplace(4 / (k * cfg.Epsilon0))
	noise := func(l GridLaplace, x float64) float64 {
		if noiseless {
			return x
		}
		return l.Add(x, rng)
	}
	sel, cur, step := -1, cfg.U0, 1
	for step != 0 && cur < 1 && T < cfg.MaxIterations {
		T++
		hat := noise(thr, cur+float64(step)*cfg.Granularity)
		accepted := -1
		for s, us := range u {
			if noise(cand, us) >= hat {
				accepted = s
				break
			}
		}
		if accepted >= 0 {
			sel = accepted
			cur += cfg.Granularity * float64(step)
			step *= 2
		} else {
			step /= 2
		}
		if trace != nil {
			trace(Iteration{T: T, U: cur, Step: step, Accepted: accepted})
		}
	}
	return sel, T, nil
}

// IterationEpsilon is the ϵ one iteration is charged: cfg.Epsilon0 times the
// grid noise's factor for sensitivity 1/k (GridLaplace.EpsilonFactor).
func (c CappedSearchConfig) IterationEpsilon() float64 {
	k := float64(c.Partitions)
	l, _ := NewGridLaplace(2 / (k * c.Epsilon0))
	m, _ := NewGridLaplace(4 / (k * c.Epsilon0))
	return c.Epsilon0 * math.Max(l.EpsilonFactor(1/k), m.EpsilonFactor(1/k))
}

// DoublingTuner is Ding et al.'s constant-overhead tuner (Algorithm 1) with
// an unconditional guarantee: utilities by subsample and aggregate (Scorer),
// the capped doubling search (CappedSearch), then one DP-SGD run of the
// selected candidate on the whole training set. With Scorer.Default the
// published default settings are one more candidate, scored on every part
// and searched as any other: Algorithm 1 takes any finite candidate set
// fixed before the data is read, so Theorem 3's guarantee is unchanged
// (the part runs, when private, count |S| + 1 candidates), and Final's
// event covers the default's final run (Hyper.Default).
type DoublingTuner struct {
	Space  Space
	Scorer *PartitionScorer
	Search CappedSearchConfig
	// Final is the final DP-SGD run of a candidate (Hyper.Run): the
	// network, the settings the candidate does not give, and in
	// Final.Config the noise multiplier and noise mode.
	Final Hyper
	Train *data.Dataset
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
		n := s.candidates(d.Space)
		l.Add(fmt.Sprintf("partition runs: DP-SGD on each of %d disjoint parts, %d candidates each", len(s.Parts), n),
			accounting.SelfComposed{Event: accounting.DPSGD(s.NoiseMultiplier, s.SamplingRate, dpsgd.StepsForEpochs(s.Epochs, s.SamplingRate)), Count: n})
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
	sel, T, err := CappedSearch(u, d.Search, randsrc.For(d.Seed, d.Key, "doubling search"), false, func(it Iteration) { res.Trace = append(res.Trace, it) })
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
	c := d.Scorer.at(d.Space, sel)
	res.Selected = &c
	arch, cfg, err := d.Final.Run(c)
	if err != nil {
		return res, err
	}
	// Which candidate the final run trains depends on the data: when the
	// candidates' runs differ in cost, the ledger counts the costliest.
	worst, err := d.Final.Event(d.Space, cfg.NoiseMultiplier)
	if err != nil {
		return res, err
	}
	cfg.Seed = d.Seed
	initRNG := randsrc.New(d.Seed, "final init")
	if d.Key != nil {
		cfg.Seed, cfg.Key = nil, d.Key.Derive("final run")
		initRNG = cfg.Key.Stream("init")
	}
	net, err := model.New(arch, initRNG)
	if err != nil {
		return res, err
	}
	final, err := dpsgd.Train(ctx, net, d.Train, cfg, nil, nil)
	if _, ok := worst.(accounting.WorstCase); ok {
		res.Ledger.Add("final DP-SGD run with the selected candidate, counted as the costliest candidate's (with its data normalisation, if any)", worst)
	} else {
		for _, e := range final.Stages.Entries {
			res.Ledger.Add("final run's "+e.Label, e.Event)
		}
		res.Ledger.Add("final DP-SGD run with the selected candidate", final.Event)
	}
	res.FinalSteps = final.Steps
	if err == nil {
		res.Model = net
	}
	return res, err
}

// DoublingOptions are the doubling tuner's settings: its options (their
// tags; see Option).
type DoublingOptions struct {
	// Partitions is k, the disjoint parts of the training data.
	Partitions int `option:"partitions" default:"10" help:"number k of disjoint training parts"`
	// Epsilon0 is ϵ of one search iteration, in nats.
	Epsilon0 float64 `option:"epsilon0" default:"0.1" help:"ϵ in nats of one search iteration"`
	// Granularity is the utility granularity g.
	Granularity float64 `option:"granularity" default:"0.01" help:"utility granularity g"`
	// U0 is the utility lower bound u₀.
	U0 float64 `option:"u0" default:"0" help:"utility lower bound u₀"`
	// MaxIterations is the cap T_max; 0: DefaultMaxIterations.
	MaxIterations int `option:"max-iterations" default:"0" help:"iteration cap T_max (default ⌈5·log₂((1−u₀)/g)⌉)"`
	// Private trains the parts with DP-SGD at PartitionNoise (counted);
	// otherwise they are clipped without noise, covered by the search's
	// Laplace noise (Lemma 2).
	Private        bool    `option:"private-partitions" default:"false" help:"train the parts with DP-SGD (default: clipped, without noise)"`
	PartitionNoise float64 `option:"partition-noise" default:"1" help:"noise multiplier of private part runs"`
	// PartEpochs are the epochs of each part run.
	PartEpochs int `option:"part-epochs" default:"3" help:"epochs of each part run"`
	// PartBatch is the expected batch size of a part run; 0: the final
	// run's batch size, or the whole part when a part is smaller.
	PartBatch int `option:"part-batch" default:"0" help:"expected batch size of each part run (default: the final run's, or the whole part when a part is smaller)"`
	// Cache is the curator-only file of finished part scores (NOT PRIVATE,
	// mode 0600), reused by a rerun with the same seed and settings; "" for
	// none.
	Cache string `option:"cache" default:"" help:"file of finished part scores, reused on a rerun (default: OUT/partition-scores.csv)" curator:"partition-scores.csv"`
}

// Values returns o as the doubling tuner's Spec.Options.
func (o DoublingOptions) Values() Values { return OptionValues(o) }

// DoublingOptionsOf returns the doubling tuner's options in s, a missing
// one at its default (one that Check refuses, at its default too).
func DoublingOptionsOf(s Spec) DoublingOptions {
	o, _ := DecodeOptions[DoublingOptions](DoublingName, s.Options)
	return o
}

// PartBatchOf is the expected batch size of s's part runs: PartBatch, or
// when it is 0 the final run's batch size, at most the nominal part size
// s.TrainN/k.
func (o DoublingOptions) PartBatchOf(s Spec) int {
	if o.PartBatch != 0 {
		return o.PartBatch
	}
	if o.Partitions > 0 && s.TrainN/o.Partitions < s.BatchSize {
		return s.TrainN / o.Partitions
	}
	return s.BatchSize
}

// NewDoubling returns the doubling tuner of s without its data, seed and
// final noise multiplier: the search (with the default cap when none is
// given), the partition scorer's settings at the nominal part size
// s.TrainN/k, and the final run's at s.TrainN: final's network, networks
// and defaults (its NominalN, Epochs and Config's sampling are s's).
func NewDoubling(s Spec, final Hyper) *DoublingTuner {
	arch := final.Arch
	o := DoublingOptionsOf(s)
	if o.MaxIterations == 0 {
		o.MaxIterations = DefaultMaxIterations(o.U0, o.Granularity)
	}
	search := CappedSearchConfig{Partitions: o.Partitions, Epsilon0: o.Epsilon0, Granularity: o.Granularity, U0: o.U0, MaxIterations: o.MaxIterations}
	var partQ float64
	partBatch := o.PartBatchOf(s)
	if o.Partitions > 0 && s.TrainN/o.Partitions > 0 {
		partQ = float64(partBatch) / float64(s.TrainN/o.Partitions)
	}
	q := float64(s.BatchSize) / float64(s.TrainN)
	scorer := &PartitionScorer{Arch: arch, Networks: final.Networks, ValSize: s.ValSize, Epochs: o.PartEpochs, BatchSize: partBatch, SamplingRate: partQ,
		Momentum: s.Momentum, LearningRate: final.Config.LearningRate, ClipNorm: final.Config.ClipNorm, Schedule: final.Config.Schedule,
		Clipping: final.Config.Clipping, AutoClipGamma: final.Config.AutoClipGamma,
		Private: o.Private, NoiseMultiplier: o.PartitionNoise, Cache: o.Cache, Default: s.Default, Invocation: s.Invocation}
	final.NominalN, final.Epochs = s.TrainN, s.Epochs
	final.Config.SamplingRate, final.Config.ExpectedBatchSize, final.Config.Steps = q, float64(s.BatchSize), dpsgd.StepsForEpochs(s.Epochs, q)
	final.Config.Momentum = s.Momentum
	return &DoublingTuner{Space: s.Space, Search: search, Seed: s.Seed, Scorer: scorer, Final: final}
}

// The doubling tuner's search space, "mnist-doubling": learning rate 0.05 …
// 2.3 (6 values log-spaced by 10^{1/3}) × clipping norm 0.5, 1, 2, 4: 24
// candidates around where DP-SGD works on MNIST, small enough for the
// tuner's k·|S| part runs.
func init() {
	RegisterSpace("mnist-doubling", func() Space {
		return Space{Name: "mnist-doubling", Dims: []Dim{
			{Name: LearningRate, Values: LogGrid(0.05, math.Cbrt(10), 6), Log: true},
			{Name: ClipNorm, Values: []float64{0.5, 1, 2, 4}},
		}}
	})
}

// doublingTuner is the "doubling" tuner: DoublingTuner, with
// DoublingOptions as its options.
type doublingTuner struct{}

// DoublingName is the doubling tuner's name in the registry.
const DoublingName = "doubling"

func (doublingTuner) Name() string { return DoublingName }
func (doublingTuner) Summary() string {
	return "Ding et al.: every candidate trained on k disjoint parts, a capped doubling AboveThreshold search, one final DP-SGD run"
}
func (doublingTuner) Options() []Option { return OptionsOf(DoublingOptions{}) }
func (doublingTuner) Uses() Uses        { return Uses{Default: true} }
func (doublingTuner) Example() string {
	return "--space mnist-doubling --epsilon 8"
}

// Check refuses an option it does not know or of the wrong type
// (CheckOptions), search settings outside Algorithm 1's domain, a weight on
// the default (every candidate is scored, the default once), any
// accountant but rdp, fewer validation examples than parts (a score's
// sensitivity 1/n_val would exceed 1/k), parts smaller than a batch, a
// non-finite partition noise and part epochs a part cannot hold.
func (t doublingTuner) Check(s Spec) error {
	if err := CheckOptions(t, s); err != nil {
		return err
	}
	o := DoublingOptionsOf(s)
	d := NewDoubling(s, Hyper{})
	if err := d.Search.Check(); err != nil {
		return invalid(err)
	}
	switch {
	case s.DefaultWeight != 0:
		return invalidf("the doubling tuner scores the default once: it takes no weight on it")
	case s.Accountant != "" && s.Accountant != "rdp":
		return invalidf("the doubling tuner is counted by the rdp accountant only, not %s", s.Accountant)
	case s.ValSize < o.Partitions:
		return invalidf("validation size %d is smaller than the %d partitions: a score's sensitivity 1/n_val would exceed 1/k", s.ValSize, o.Partitions)
	case s.BatchSize < 1 || o.PartBatch < 0:
		return invalidf("batch size %d, part batch size %d: each must be positive", s.BatchSize, o.PartBatch)
	case o.Partitions > s.TrainN:
		return invalidf("%d partitions of %d training examples leave some parts empty", o.Partitions, s.TrainN)
	case o.Partitions > s.TrainN/o.PartBatchOf(s):
		return invalidf("%d partitions leave fewer than the part batch size %d examples per part", o.Partitions, o.PartBatchOf(s))
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
	search := NewDoubling(s, Hyper{}).SearchLedger()
	return accounting.Composed{Events: []accounting.Event{search.Event(), base}}
}
func (doublingTuner) Label(Spec) string     { return "final DP-SGD run with the selected candidate" }
func (doublingTuner) Partitions(s Spec) int { return DoublingOptionsOf(s).Partitions }

// Shortfall says what the search alone spends: nothing is left for the
// final run.
func (doublingTuner) Shortfall(s Spec, delta float64) string {
	d := NewDoubling(s, Hyper{})
	l := d.SearchLedger()
	over, _ := l.Spent(accounting.RDP{}, delta)
	return fmt.Sprintf("the search alone (at most %d iterations of ϵ = %g) spends ε = %.4f at δ = %g, leaving nothing for the final run",
		d.Search.MaxIterations, d.Search.Epsilon0, over.Epsilon, delta)
}

// check returns an error for a record no search can have produced.
func (r SearchRecord) check() error {
	c := CappedSearchConfig{Partitions: 1, Epsilon0: r.Epsilon0, Granularity: r.Granularity, U0: r.U0, MaxIterations: r.MaxIterations}
	if err := c.Check(); err != nil {
		return err
	}
	if !(r.Epsilon > 0) || math.IsInf(r.Epsilon, 1) {
		return fmt.Errorf("charged ε = %v must be positive and finite", r.Epsilon)
	}
	return nil
}

// Plan is the doubling tuning of s before its data is read, its final run
// as final makes it at noise multiplier sigma.
func (doublingTuner) Plan(s Spec, final Hyper, sigma float64) PartitionedPlan {
	d := NewDoubling(s, final)
	d.Final.Config.NoiseMultiplier = sigma
	return &doublingPlan{d: d, spec: s}
}

// doublingPlan is a doubling tuning before its data is read.
type doublingPlan struct {
	d    *DoublingTuner
	spec Spec
}

// Worst is the search's ledger at its cap and the whole final run.
func (p *doublingPlan) Worst() accounting.Ledger {
	l := p.d.SearchLedger()
	e, err := p.d.Final.Event(p.d.Space, p.d.Final.Config.NoiseMultiplier)
	if err != nil {
		e = accounting.NonPrivate{Reason: err.Error()} // the job checks the runs first
	}
	l.Add("final DP-SGD run with the selected candidate", e)
	return l
}

// Notes warns when k·ϵ is below 5, where Ding et al. find the search picks
// poor candidates.
func (p *doublingPlan) Notes() []string {
	o := DoublingOptionsOf(p.spec)
	if k := float64(o.Partitions) * o.Epsilon0; k < 5 {
		return []string{fmt.Sprintf("k·ϵ = %g is below 5; Ding et al. advise k ≥ 5/ϵ (here %d partitions), else the search picks poor candidates", k, int(math.Ceil(5/o.Epsilon0)))}
	}
	return nil
}

func (p *doublingPlan) Scorer() *PartitionScorer { return p.d.Scorer }

// Run scores, searches and trains the final run on fit (DoublingTuner.Run).
func (p *doublingPlan) Run(ctx context.Context, fit *data.Dataset, seed *uint64, key *randsrc.Key, noise dpsgd.NoiseMode) (PartitionedResult, error) {
	d := p.d
	d.Seed, d.Key, d.Final.Config.Noise, d.Train = seed, key, noise, fit
	res, err := d.Run(ctx)
	return PartitionedResult{Result: res.Result, Report: func(f ReportFacts) any { return p.report(res, f) }}, err
}

// report is report.json of a doubling tuning.
func (p *doublingPlan) report(res DoublingResult, f ReportFacts) *DoublingReport {
	o, d := DoublingOptionsOf(p.spec), p.d
	rep := &DoublingReport{Tuner: f.Tuner, Dataset: f.Dataset, NominalSize: f.NominalSize, Space: p.spec.Space.Name, Candidates: p.spec.Candidates(),
		Selected: f.Selected, SelectedChoices: f.SelectedChoices, Fixed: f.Fixed, Fallback: res.Fallback, TestAccuracy: f.TestAccuracy, Epsilon: f.Epsilon, Delta: f.Delta, Accountant: f.Accountant,
		BaseNoiseMultiplier: d.Final.Config.NoiseMultiplier, Partitions: o.Partitions, Epsilon0: o.Epsilon0,
		Granularity: o.Granularity, U0: o.U0, MaxIterations: d.Search.MaxIterations, RealisedIterations: res.Iterations,
		EarlierSearches: len(res.EarlierSearches), PrivatePartitions: o.Private, Epochs: p.spec.Epochs, FinalSteps: res.FinalSteps,
		PartEpochs: o.PartEpochs, Seeded: f.Seeded, SecureNoise: f.SecureNoise, Interrupted: f.Interrupted, Failed: f.Failed, Ledger: f.Ledger}
	if c := d.Final.Config; c.Clipping == dpsgd.AutomaticClipping {
		rep.Clipping, rep.AutoClipGamma = c.Clipping.String(), c.AutoClipGamma
	}
	if worst, err := d.Final.Event(d.Space, d.Final.Config.NoiseMultiplier); err == nil && isWorstCase(worst) {
		// The ledger counts the costliest candidate's final run.
		if fe, err := (accounting.RDP{}).Epsilon(worst, f.Delta); err == nil {
			rep.FinalEpsilon = fe.Epsilon
		}
	} else if res.Selected != nil {
		if arch, done, err := d.Final.Run(*res.Selected); err == nil {
			done.Steps = res.FinalSteps
			if fe, err := (accounting.RDP{}).Epsilon(dpsgd.PlannedEvent(arch, done), f.Delta); err == nil {
				rep.FinalEpsilon = fe.Epsilon
			}
		}
	}
	var norm accounting.Event
	if res.Selected != nil {
		if arch, cfg, err := d.Final.Run(*res.Selected); err == nil {
			norm = dpsgd.StagesEvent(arch, cfg)
		}
	}
	rep.EpsilonComponents = EpsilonComponents(f.Ledger, len(d.SearchLedger().Entries), true, norm, accounting.RDP{}, f.Delta)
	rep.TuningOverhead = float64(d.Search.MaxIterations) * d.Search.IterationEpsilon()
	rep.PaperWHPEpsilon = rep.FinalEpsilon + 3*math.Log2(math.Max((1-o.U0)/o.Granularity, 2))*o.Epsilon0
	return rep
}

// isWorstCase reports whether e is an accounting.WorstCase.
func isWorstCase(e accounting.Event) bool {
	_, ok := e.(accounting.WorstCase)
	return ok
}

// DoublingReport is report.json of the doubling tuner: the caller's
// ReportFacts and the search's settings and outcome.
type DoublingReport struct {
	Tuner           string             `json:"tuner"`
	Dataset         string             `json:"dataset"`
	NominalSize     int                `json:"nominal_size"`
	Space           string             `json:"space"`
	Candidates      int                `json:"candidates"`
	Selected        map[string]float64 `json:"selected"`
	SelectedChoices map[string]string  `json:"selected_choices,omitempty"`
	// Fixed is the learning rate and clipping norm every run took where
	// the space has no such dimension (ReportFacts.Fixed).
	Fixed               map[string]float64 `json:"fixed,omitempty"`
	Clipping            string             `json:"clipping,omitempty"`        // "automatic" when every run clipped automatically; absent under flat clipping
	AutoClipGamma       float64            `json:"auto_clip_gamma,omitempty"` // automatic clipping's stability constant γ
	Fallback            bool               `json:"fallback_first_candidate"`
	TestAccuracy        *float64           `json:"test_accuracy"`
	Epsilon             float64            `json:"epsilon"` // the ledger's: what was spent
	Delta               float64            `json:"delta"`
	Accountant          string             `json:"accountant"`
	FinalEpsilon        float64            `json:"final_run_epsilon"`       // of the final run's completed steps; the costliest candidate's whole run when candidates differ in cost (as the ledger counts it)
	TuningOverhead      float64            `json:"tuning_overhead_epsilon"` // T_max·ϵ
	BaseNoiseMultiplier float64            `json:"base_noise_multiplier"`   // the final run's σ
	Partitions          int                `json:"partitions"`
	Epsilon0            float64            `json:"epsilon0"`
	Granularity         float64            `json:"granularity"`
	U0                  float64            `json:"u0"`
	MaxIterations       int                `json:"max_iterations"`
	// Realised iterations and the paper's with-high-probability figure,
	// for comparison only: the guarantee is the ledger's, at the cap.
	RealisedIterations int     `json:"realised_iterations_not_the_guarantee"`
	PaperWHPEpsilon    float64 `json:"paper_whp_epsilon_not_the_guarantee"`
	EarlierSearches    int     `json:"earlier_searches_on_this_cache"`
	PrivatePartitions  bool    `json:"private_partitions"`
	Epochs             int     `json:"final_epochs"`
	FinalSteps         int     `json:"final_steps_done"`
	PartEpochs         int     `json:"part_epochs"`
	Seeded             bool    `json:"seeded"` // the seed itself is never written
	SecureNoise        bool    `json:"secure_noise"`
	Interrupted        bool    `json:"interrupted"`
	Failed             string  `json:"failed,omitempty"`
	// EpsilonComponents are the ledger's parts, each with its ε alone at
	// Delta: the "selection" (the private part runs, if any, and the
	// search at its cap), the "final run" and, for a network with private
	// data normalisation, the final run's "data normalisation" (part of
	// the final run's ε). They do not add up to Epsilon (RDP composition).
	EpsilonComponents []EpsilonComponent `json:"epsilon_components,omitempty"`
	Ledger            accounting.Ledger  `json:"ledger"`
}

// Outcome is what r released: the final run's noise multiplier, the
// selected candidate and its test accuracy (nil when nothing was released).
func (r *DoublingReport) Outcome() (sigma float64, selected map[string]float64, testAccuracy *float64) {
	return r.BaseNoiseMultiplier, r.Selected, r.TestAccuracy
}

// Cost is the curator-side cost of r's tuning over a space of candidates:
// the DP-SGD runs (every candidate on each part, then the final run) and
// their passes over the full training set: each part run PartEpochs over
// 1/Partitions of it, the final run the selected candidate's epochs (its
// epochs dimension, else Epochs).
func (r *DoublingReport) Cost(candidates int) (runs int, trainingEpochs float64) {
	final := float64(r.Epochs)
	if e, ok := r.Selected[Epochs]; ok {
		final = e
	}
	return candidates*r.Partitions + 1, float64(candidates*r.PartEpochs) + final
}

// PrintSummary prints r for the curator's terminal: the selection, the test
// accuracy and what was spent, the search's cap beside its realised
// iterations.
func (r *DoublingReport) PrintSummary(w io.Writer) {
	if r.Selected != nil {
		note := ""
		if r.Fallback {
			note = "  (no candidate passed the search: the first candidate, fixed in advance)"
		}
		// A dimension the space lacks was the same for every run: print
		// the value used, not a missing selection's zero.
		hyper := func(name string) string {
			if v, ok := r.Selected[name]; ok {
				return fmt.Sprintf("%.4g", v)
			}
			if v, ok := r.Fixed[name]; ok {
				return fmt.Sprintf("%.4g (fixed)", v)
			}
			return "(not recorded)"
		}
		clip := "clipping norm " + hyper(ClipNorm)
		if r.Clipping != "" {
			clip = fmt.Sprintf("%s clipping (γ = %g)", r.Clipping, r.AutoClipGamma)
		}
		fmt.Fprintf(w, "selected       learning rate %s, %s%s\n", hyper(LearningRate), clip, note)
		if o := OtherSettings(r.Selected, r.SelectedChoices); o != "" {
			fmt.Fprintf(w, "               %s\n", o)
		}
	} else {
		fmt.Fprintln(w, "released       nothing (interrupted or failed)")
	}
	if r.TestAccuracy != nil {
		fmt.Fprintf(w, "test accuracy  %.4f\n", *r.TestAccuracy)
	}
	final := fmt.Sprintf("final run %.4f", r.FinalEpsilon)
	if r.FinalSteps == 0 {
		final = "no final run"
	} else if r.Interrupted || r.Failed != "" {
		final = fmt.Sprintf("final run %.4f (%d steps done)", r.FinalEpsilon, r.FinalSteps)
	}
	fmt.Fprintf(w, "privacy        ε = %.4f, δ = %g spent (rdp): %s + search at most %d × %g = %.4f\n",
		r.Epsilon, r.Delta, final, r.MaxIterations, r.Epsilon0, r.TuningOverhead)
	fmt.Fprintf(w, "iterations     %d realised of the cap %d; the paper's w.h.p. figure ε + 3·log₂(n)·ϵ = %.4f (not a guarantee)\n",
		r.RealisedIterations, r.MaxIterations, r.PaperWHPEpsilon)
}
