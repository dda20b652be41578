package job

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dptune/dptune/audit"
	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/cpus"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// AuditOneRunName names the one-run audit in audit.json's protocol field.
const AuditOneRunName = "one-run"

// OneRunSpec is a one-run audit (Steinke, Nasr & Jagielski 2023): the
// training run Train, as Train takes it, with Canaries canaries added.
type OneRunSpec struct {
	// Train is the audited run: its data, network, ε, δ, settings, budget
	// file (charged as by Train) and seed (which, when set, also fixes the
	// canaries).
	Train TrainSpec
	// Canaries is m, at least 2 and at most the test set's size.
	Canaries int
	// Guesses are the guess counts r tried (each in [1, Canaries], fixed
	// before training); nil: DefaultOneRunGuesses(Canaries).
	Guesses []int
	// Confidence of ε_L, in (0, 1), split over the guess counts.
	Confidence float64
	// Canary is OneRunGradient (white-box, the default when empty) or
	// OneRunInput (black-box).
	Canary string
}

// The kinds of one-run canary (Steinke, Nasr & Jagielski 2023, §6).
const (
	// OneRunGradient: white-box Dirac gradient canaries, each on its own
	// parameter coordinate (audit.NewDiracCanaries); an included canary
	// is an extra example that Poisson sampling draws like any other and
	// whose gradient is CanaryGradientNorm·C on its coordinate, clipped to
	// C by DP-SGD's own clipping (to 4/(4 + γ) of 1 under automatic
	// clipping). The auditor sees the initial and final
	// parameters; a canary's score is how far its coordinate moved down.
	OneRunGradient = "gradient"
	// OneRunInput: black-box input-space canaries, each a public test
	// image with a random wrong label; the score is the final model's
	// log-probability of that label.
	OneRunInput = "input"
)

// OneRunResult is audit.json of a one-run audit. Everything in it is a
// function of the trained model, the public test images and the secret
// canary draw: post-processing of the run, whose ledger (Run.Ledger)
// covers it.
type OneRunResult struct {
	Protocol     string             `json:"protocol"` // "one-run"
	EpsilonLower float64            `json:"epsilon_lower"`
	Confidence   float64            `json:"confidence"`
	Delta        float64            `json:"delta"`
	Trials       int                `json:"trials"` // training runs: 1
	EpsilonUpper map[string]float64 `json:"epsilon_upper"`
	Canaries     int                `json:"canaries"`
	// Canary is the kind of canary: "gradient" or "input".
	Canary  string              `json:"canary"`
	Guesses []audit.OneRunBound `json:"guesses"`
	// Run is the audited run's report (its test metrics are on the test
	// set without the canaries).
	Run *TrainReport `json:"run"`
}

// DefaultOneRunGuesses are the guess counts tried by default: 2%, 5%, 10%,
// 20%, 50% and 100% of m (at least 2, even, without repeats).
func DefaultOneRunGuesses(m int) []int {
	var out []int
	for _, f := range []float64{0.02, 0.05, 0.1, 0.2, 0.5, 1} {
		r := min(m, max(2, 2*int(math.Round(f*float64(m)/2))))
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// MaxOneRunGuessCounts is the most guess counts a one-run audit splits its
// confidence over.
const MaxOneRunGuessCounts = 64

// check refuses what no audit can run with, before any work.
func (s OneRunSpec) check() error {
	switch {
	case s.Canaries < 2:
		return invalidf("%d canaries: a one-run audit needs at least 2", s.Canaries)
	case !(s.Confidence > 0 && s.Confidence < 1):
		return invalidf("confidence %v is outside (0, 1)", s.Confidence)
	case s.Train.NonPrivate:
		return invalidf("a one-run audit audits a private run: it takes no --non-private")
	case s.Canary != OneRunGradient && s.Canary != OneRunInput:
		return invalidf("canary kind %q is neither %q nor %q", s.Canary, OneRunGradient, OneRunInput)
	case len(s.Guesses) > MaxOneRunGuessCounts:
		return invalidf("%d guess counts: at most %d", len(s.Guesses), MaxOneRunGuessCounts)
	}
	for _, r := range s.Guesses {
		if r < 1 || r > s.Canaries {
			return invalidf("guess count %d is outside [1, %d canaries]", r, s.Canaries)
		}
	}
	return nil
}

// AuditOneRun audits one training run (Steinke, Nasr & Jagielski 2023,
// "Privacy Auditing with One (1) Training Run"): m canaries, each added to
// the training set with probability 1/2, the draw keyed by the run's seed
// or crypto/rand; the run trains once through Train (ε calibrated, budget
// charged, ledger kept as for any run); the canaries are scored and ε_L
// follows from audit.OneRunAudit over the guess counts, against the run's
// ε.
//
// White-box (OneRunGradient, the default): Dirac gradient canaries on m
// distinct parameter coordinates drawn at random, scored by θ₀[j] − θ_T[j]
// (m must not exceed the network's parameter count). Black-box
// (OneRunInput): m images drawn from the public test set, each with a
// random wrong label, scored by the final model's log-probability of that
// label (a model trained on a mislabelled image fits it better). Either
// way the canaries leave the test set the run is scored on, they carry no
// private data, and everything reported is post-processing of the run.
// Expect ε_L below ε, far below for black-box: one run gives the auditor
// one release to look at.
//
// Refused settings (fewer than 2 canaries, more than the test set or the
// parameters hold, a guess count outside [1, m], a confidence outside (0,
// 1), a non-private run) wrap ErrInvalid; on cancellation the run's
// ledger stays charged as Train charges it.
func AuditOneRun(ctx context.Context, s OneRunSpec) (*OneRunResult, error) {
	if s.Guesses == nil {
		s.Guesses = DefaultOneRunGuesses(s.Canaries)
	}
	if s.Canary == "" {
		s.Canary = OneRunGradient
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := s.checkGradientCanaries(); err != nil {
		return nil, err
	}
	a := newOneRun(s)
	spec := s.Train
	spec.arrange = a.arrange
	if s.Canary == OneRunGradient {
		spec.engine = func(net *model.Net, cfg dpsgd.Config) (dpsgd.Engine, error) { return a.engine(ctx, net, cfg) }
	}
	rel, _, err := Train(ctx, spec)
	if err != nil {
		return nil, err
	}
	rep := rel.Report.(*TrainReport)
	scores, err := a.scores(ctx, rel.Model)
	if err != nil {
		return nil, err
	}
	lower, each, err := audit.OneRunAudit(scores, a.in, s.Guesses, s.Train.Delta, s.Confidence)
	if err != nil {
		return nil, err
	}
	res := &OneRunResult{Protocol: AuditOneRunName, EpsilonLower: lower, Confidence: s.Confidence, Delta: s.Train.Delta, Trials: 1,
		EpsilonUpper: map[string]float64{}, Canaries: s.Canaries, Guesses: each, Run: rep,
		Canary: s.Canary}
	if rep.Epsilon != nil {
		res.EpsilonUpper[rep.Accountant] = *rep.Epsilon
	}
	return res, nil
}

// checkGradientCanaries refuses more gradient canaries than the network
// has parameters (one coordinate each).
func (s OneRunSpec) checkGradientCanaries() error {
	if s.Canary != OneRunGradient {
		return nil
	}
	net, err := model.NewZero(s.Train.Data.Arch)
	if err != nil {
		return invalid(err)
	}
	if s.Canaries > net.NumParams() {
		return invalidf("%d canaries: the network has %d parameters, one per gradient canary", s.Canaries, net.NumParams())
	}
	return nil
}

// oneRun is a one-run audit under way: its canaries, which of them the
// run includes, and what the run's hooks recorded. Its random draws, in
// this order, are the inclusions, the canaries' test examples and wrong
// labels (arrange), and the gradient canaries' coordinates (engine).
type oneRun struct {
	s   OneRunSpec
	rng *rand.Rand
	in  []bool // canary i is in the training set
	// canaries are the input canaries.
	canaries *data.Dataset
	// first is the index of the first gradient canary in the training
	// set, coords the gradient canaries' coordinates and theta0 the
	// initial parameters.
	first  int
	coords []int
	theta0 []float32
}

// newOneRun draws which of s's canaries the run includes, each with
// probability 1/2.
func newOneRun(s OneRunSpec) *oneRun {
	a := &oneRun{s: s, rng: randsrc.New(s.Train.Seed, "one-run canaries"), in: make([]bool, s.Canaries)}
	for i := range a.in {
		a.in[i] = a.rng.IntN(2) == 1
	}
	return a
}

// arrange is the run's TrainSpec.arrange: it draws the canaries from the
// test set (the rest stays the test set) with wrong labels, and adds the
// included ones to the training set — as examples, or as slots for
// gradient canaries.
func (a *oneRun) arrange(train, test *data.Dataset) (*data.Dataset, *data.Dataset, error) {
	s, rng := a.s, a.rng
	if s.Canaries > test.N {
		return nil, nil, invalidf("%d canaries: the test set they are drawn from holds %d", s.Canaries, test.N)
	}
	perm := rng.Perm(test.N)
	a.canaries = test.Subset(test.Name+" canaries", perm[:s.Canaries])
	rest := test.Subset(test.Name, slices.Sorted(slices.Values(perm[s.Canaries:])))
	var added []int
	for i := range a.canaries.Y {
		a.canaries.Y[i] = uint8((int(a.canaries.Y[i]) + 1 + rng.IntN(a.canaries.Classes-1)) % a.canaries.Classes)
		if a.in[i] {
			added = append(added, i)
		}
	}
	if s.Canary == OneRunGradient {
		a.first = train.N
		return audit.WithCanarySlots(train, len(added)), rest, nil
	}
	return withExamples(train, a.canaries, added), rest, nil
}

// engine is a gradient-canary run's TrainSpec.engine: it records the
// initial parameters, draws each canary's coordinate, and has the included
// canaries' slots contribute Dirac gradients there.
func (a *oneRun) engine(ctx context.Context, net *model.Net, cfg dpsgd.Config) (dpsgd.Engine, error) {
	a.theta0 = slices.Clone(net.Params)
	a.coords = a.rng.Perm(net.NumParams())[:a.s.Canaries]
	var hooked []int
	for i, c := range a.coords {
		if a.in[i] {
			hooked = append(hooked, c)
		}
	}
	inner, err := dpsgd.NewEngineWorkers(net, max(1, int(math.Ceil(cfg.ExpectedBatchSize))), cpus.Of(ctx))
	if err != nil {
		return nil, err
	}
	return audit.NewDiracCanaries(inner, a.first, hooked), nil
}

// scores are the canaries' scores on the trained model: a gradient
// canary's the fall of its coordinate, an input canary's canaryScores.
func (a *oneRun) scores(ctx context.Context, net *model.Net) ([]float64, error) {
	if a.s.Canary != OneRunGradient {
		return canaryScores(ctx, net, a.canaries)
	}
	scores := make([]float64, a.s.Canaries)
	for i, c := range a.coords {
		scores[i] = float64(a.theta0[c]) - float64(net.Params[c])
	}
	return scores, nil
}

// withExamples is d with the examples idx of extra appended.
func withExamples(d, extra *data.Dataset, idx []int) *data.Dataset {
	size := d.ExampleSize()
	out := &data.Dataset{Name: d.Name, N: d.N + len(idx), C: d.C, H: d.H, W: d.W, Classes: d.Classes,
		X: make([]float32, 0, (d.N+len(idx))*size), Y: make([]uint8, 0, d.N+len(idx))}
	out.X, out.Y = append(out.X, d.X...), append(out.Y, d.Y...)
	for _, i := range idx {
		out.X, out.Y = append(out.X, extra.Example(i)...), append(out.Y, extra.Y[i])
	}
	return out
}

// canaryScores is net's log-probability of each canary's label.
func canaryScores(ctx context.Context, net *model.Net, canaries *data.Dataset) ([]float64, error) {
	logits, err := dpsgd.Logits(ctx, net, canaries.X)
	if err != nil {
		return nil, err
	}
	O := canaries.Classes
	scores := make([]float64, canaries.N)
	for i, l := range canaries.Y {
		scores[i] = -model.CrossEntropy(logits[i*O:(i+1)*O], int(l))
		if math.IsNaN(scores[i]) {
			return nil, fmt.Errorf("one-run audit: canary %d's score is NaN", i)
		}
	}
	return scores, nil
}
