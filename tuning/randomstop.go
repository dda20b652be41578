package tuning

import (
	"context"
	"fmt"
	"math"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
)

// RandomStop is random-stop tuning (Liu & Talwar 2019; Papernot & Steinke
// 2022; Algorithm 2 of Xiang et al., "Selection leaks privacy"): K ∼
// cfg.Repetitions runs, each on a candidate drawn uniformly from the space,
// and the best run's candidate, model and score are released. Its cost is
// accounting.RepeatAndSelect of the trainer's event (Papernot & Steinke,
// Theorems 2 and 6).
//
// With cfg.Default (the published default settings), each run draws the
// default with probability cfg.DefaultWeight = w and otherwise a candidate
// of the space uniformly. The default is never forced in: Papernot &
// Steinke's Theorems 2 and 6 need the K runs to be i.i.d. draws of one
// fixed, data-independent randomised algorithm, and a run that first draws
// its candidate from this fixed prior (w on the default, (1 − w)/|S| on each
// grid point: it depends on no score and no data) is such an algorithm, so
// the same RepeatAndSelect event counts it — the trainer's event then
// covers the default's run too (DPSGDTrainer.Default). A deterministic
// "always run the default once" would not be an i.i.d. repetition and is
// outside their theorems.
func RandomStop(ctx context.Context, cfg Config) (Result, error) {
	var s sampler = uniform{cfg.Space.Size()}
	if cfg.Default != nil {
		if err := checkWeight(cfg.DefaultWeight); err != nil {
			return Result{}, err
		}
		s = weighted{n: cfg.Space.Size(), w: cfg.DefaultWeight}
	}
	ev := SelectionEvent(cfg.Trainer.Event(), cfg.Repetitions, nil)
	return run(ctx, cfg, s, ev, randomStopLabel(cfg.Repetitions, cfg.Default != nil, cfg.DefaultWeight))
}

// DefaultWeight is random-stop's prior weight on the default candidate
// when none is given: each run draws the default with probability 1/4.
const DefaultWeight = 0.25

// checkWeight refuses a prior weight on the default outside (0, 1).
func checkWeight(w float64) error {
	if !(w > 0 && w < 1) {
		return invalidf("the default's weight %v is outside (0, 1)", w)
	}
	return nil
}

func randomStopLabel(rep accounting.Repetitions, withDefault bool, w float64) string {
	if withDefault {
		return fmt.Sprintf("random-stop tuning, %s runs, each the default with probability %g, best released", rep, w)
	}
	return "random-stop tuning, " + rep.String() + " runs, best released"
}

// SelectionEvent is the event of a random-stop tuning (opt nil) or DP-HyPO
// tuning (density bounds of opt) whose every run is base: the whole
// tuning's cost, known before it starts (Papernot & Steinke, Theorem 2;
// Wang et al., Theorem 1). It is the one place these events are built.
func SelectionEvent(base accounting.Event, rep accounting.Repetitions, opt *GPOptions) accounting.Event {
	if opt != nil {
		return accounting.AdaptiveRepeatAndSelect{Event: base, Repetitions: rep, MaxRatio: opt.MaxRatio, MinRatio: opt.MinRatio}
	}
	return accounting.RepeatAndSelect{Event: base, Repetitions: rep}
}

// XiangO is the name of the accountant that counts random-stop tuning of
// DP-SGD runs by Xiang et al.'s Algorithm 3 with μ = τ√T/σ
// (accounting.GaussianSelect): an APPROXIMATION, not a proved bound, for
// public validation only (a private score's noise is not in it).
const XiangO = "xiang-o"

// xiangOrders are the RDP orders of the xiang-o accountant: its Algorithm 3
// integrates numerically at every order, so a compact set keeps calibration
// fast (the ε it gives is at least the full set's).
var xiangOrders = []float64{1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64}

// XiangEvent is the xiang-o accountant's event of random-stop tuning with K ∼
// rep runs of a DP-SGD base run (accounting.DPSGD: sampling rate τ, noise
// multiplier σ, T steps): accounting.GaussianSelect with μ = XiangMu(τ, σ, T).
// A base that is not a DP-SGD run alone has no such event: the result is
// then an event of infinite cost.
func XiangEvent(base accounting.Event, rep accounting.Repetitions) accounting.Event {
	mu := math.Inf(1)
	if sc, ok := base.(accounting.SelfComposed); ok {
		if ps, ok := sc.Event.(accounting.PoissonSampled); ok {
			if g, ok := ps.Event.(accounting.Gaussian); ok && g.Sensitivity == 1 {
				mu = accounting.XiangMu(ps.SamplingRate, g.NoiseMultiplier, sc.Count)
			}
		}
	}
	return accounting.GaussianSelect{Mu: mu, Repetitions: rep, Reduction: XiangO}
}

// XiangAccountant is the accountant of the xiang-o events (RDP at
// xiangOrders).
func XiangAccountant() accounting.Accountant { return accounting.RDP{Orders: xiangOrders} }

// randomStop is the "randomstop" tuner: RandomStop.
type randomStop struct{}

// RandomStopName is the random-stop tuner's name in the registry.
const RandomStopName = "randomstop"

func (randomStop) Name() string { return RandomStopName }
func (randomStop) Summary() string {
	return "K ~ TNB(η, γ) or Poisson(μ) runs on uniformly drawn candidates (Liu & Talwar 2019; Papernot & Steinke 2022)"
}
func (randomStop) Options() []Option { return nil }
func (randomStop) Uses() Uses {
	return Uses{Repetitions: true, DefaultRuns: accounting.Poisson, TrainerScores: true, Diagnostics: true, Default: true}
}

// Check refuses any option (it has none; CheckOptions), a K whose mean is
// above accounting.MaxMeanRuns, a weight on the default outside (0, 1),
// and the xiang-o accountant except for public validation without a
// budget file (and without the default, whose run need not share the
// space's DP-SGD shape).
func (r randomStop) Check(s Spec) error {
	if err := CheckOptions(r, s); err != nil {
		return err
	}
	if err := s.Repetitions.CheckSampled(); err != nil {
		return invalid(err)
	}
	if s.Default != nil {
		if err := checkWeight(s.DefaultWeight); err != nil {
			return err
		}
		if s.Accountant == XiangO {
			return invalidf("the xiang-o accountant does not count the default among the candidates")
		}
	}
	switch s.Accountant {
	case "", "rdp":
	case XiangO:
		switch {
		case s.Validation != "public":
			return invalidf("the xiang-o accountant counts random-stop tuning with public validation only")
		case s.Budget:
			return invalidf("the xiang-o accountant is an approximation: a budget file composes proved bounds only")
		}
	default:
		return invalidf("unknown tuning accountant %q (want rdp or xiang-o)", s.Accountant)
	}
	return nil
}

func (randomStop) Accountant(s Spec) accounting.Accountant {
	if s.Accountant == XiangO {
		return XiangAccountant()
	}
	return accounting.RDP{}
}

func (randomStop) Event(base accounting.Event, s Spec) accounting.Event {
	if s.Accountant == XiangO {
		return XiangEvent(base, s.Repetitions)
	}
	return SelectionEvent(base, s.Repetitions, nil)
}

func (randomStop) Label(s Spec) string {
	if s.Accountant == XiangO {
		return randomStopLabel(s.Repetitions, false, 0) + " (Xiang et al., Algorithm 3: APPROXIMATE)"
	}
	return randomStopLabel(s.Repetitions, s.Default != nil, s.DefaultWeight)
}

// Run is RandomStop. Its ledger holds the proved event (RepeatAndSelect),
// also under the xiang-o accountant.
func (randomStop) Run(ctx context.Context, s Spec, t Trainer, r runner.Runner) (Result, error) {
	return RandomStop(ctx, s.config(t, r))
}

// checkRDPOnly refuses any accountant but rdp (the xiang-o accountant
// counts random-stop tuning only).
func checkRDPOnly(s Spec) error {
	if s.Accountant != "" && s.Accountant != "rdp" {
		if s.Accountant == XiangO {
			return invalidf("the xiang-o accountant counts random-stop tuning with public validation only")
		}
		return invalidf("unknown tuning accountant %q (want rdp or xiang-o)", s.Accountant)
	}
	return nil
}
