package job

import (
	"context"
	"errors"
	"math"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// AccountSpec asks one question about DP-SGD with Poisson sampling rate
// SamplingRate, alone or as every run of a random-stop tuning: given two of
// the noise multiplier, the number of steps and a target ε, the third.
// Solve names the unknown: "epsilon", "noise_multiplier" or "steps".
type AccountSpec struct {
	Solve           string
	NoiseMultiplier float64
	SamplingRate    float64
	Steps           int
	Epsilon, Delta  float64 // ε in nats
	// Accountant is "rdp" (default), "pld", "gdp" (an approximation,
	// labelled as such), or "xiang-o" / "xiang-g": random-stop tuning of
	// DP-SGD by Xiang et al.'s Algorithm 3 (accounting.GaussianSelect), with
	// μ = τ√N/σ (their eq. 19) or the GDP central limit theorem's μ (their
	// Corollary 2), approximate and labelled so. They answer "epsilon" only
	// and need Repetitions.
	Accountant string
	// GDPMu gives the xiang accountants' μ directly (σ, τ and steps unused).
	GDPMu float64
	// BaseEpsilon, for the xiang accountants instead of NoiseMultiplier,
	// calibrates σ so that one DP-SGD run is (BaseEpsilon, Delta)-DP by RDP.
	BaseEpsilon float64
	// Repetitions, when set, makes the question one about random-stop
	// tuning whose every run is the DP-SGD run (Papernot & Steinke 2022);
	// MaxRatio and MinRatio (C and c) > 0 make it DP-HyPO's (Wang et al.
	// 2023, Theorem 1). Counted by the rdp accountant only.
	Repetitions        *accounting.Repetitions
	MaxRatio, MinRatio float64
}

// AccountResult is Account's answer; its JSON is `dptune account --json`.
type AccountResult struct {
	Epsilon         *float64       `json:"epsilon"` // null when unbounded
	EpsilonNote     string         `json:"epsilon_note,omitempty"`
	Delta           float64        `json:"delta"`
	Accountant      string         `json:"accountant"`
	NoiseMultiplier float64        `json:"noise_multiplier"`
	SamplingRate    float64        `json:"sampling_rate"`
	Steps           int            `json:"steps"`
	StepsCapped     bool           `json:"steps_capped,omitempty"` // the step search hit dpsgd.MaxSteps
	Order           float64        `json:"order,omitempty"`
	Approximate     bool           `json:"approximate,omitempty"`
	Solved          string         `json:"solved_for"` // "epsilon", "noise_multiplier" or "steps"
	Tuning          *TuningAccount `json:"tuning,omitempty"`
	// Mu is the reduced game's μ (xiang accountants).
	Mu float64 `json:"mu,omitempty"`
	// GenericEpsilon is Papernot & Steinke's ε of the same tuning (xiang
	// accountants, TNB or Poisson repetitions, σ known), for comparison.
	GenericEpsilon *float64 `json:"papernot_steinke_epsilon,omitempty"`
}

// TuningAccount is the tuning part of an AccountResult.
type TuningAccount struct {
	Repetitions accounting.Repetitions `json:"repetitions"`
	MeanRuns    float64                `json:"mean_runs"`
	MaxRatio    float64                `json:"max_ratio,omitempty"`
	MinRatio    float64                `json:"min_ratio,omitempty"`
	// BaseEpsilon is the ε of one run alone, at the same δ (null if unbounded).
	BaseEpsilon *float64 `json:"base_epsilon"`
}

// event is the pipeline's event for σ and steps.
func (s AccountSpec) event(sigma float64, steps int) accounting.Event {
	base := accounting.DPSGD(sigma, s.SamplingRate, steps)
	switch {
	case s.Repetitions == nil:
		return base
	case s.MaxRatio > 0:
		return tuning.SelectionEvent(base, *s.Repetitions, &tuning.GPOptions{MaxRatio: s.MaxRatio, MinRatio: s.MinRatio})
	}
	return tuning.SelectionEvent(base, *s.Repetitions, nil)
}

// check returns an error wrapping ErrInvalid for an impossible question.
func (s AccountSpec) check() (accounting.Accountant, error) {
	acc, err := Accountant(s.Accountant, true)
	if err != nil {
		return nil, err
	}
	switch {
	case !(s.SamplingRate > 0 && s.SamplingRate <= 1):
		return nil, invalidf("sampling rate %v is outside (0, 1]", s.SamplingRate)
	case s.Solve != "steps" && (s.Steps < 0 || s.Steps > dpsgd.MaxSteps):
		return nil, invalidf("steps %d is outside [0, %d]", s.Steps, dpsgd.MaxSteps)
	case s.Solve != "noise_multiplier" && (!(s.NoiseMultiplier > 0) || math.IsInf(s.NoiseMultiplier, 1)):
		return nil, invalidf("noise multiplier %v must be positive and finite", s.NoiseMultiplier)
	case s.Solve != "epsilon" && accounting.CheckEpsilon(s.Epsilon) != nil:
		return nil, invalidf("epsilon: %v", accounting.CheckEpsilon(s.Epsilon))
	case s.Solve != "epsilon" && s.Solve != "noise_multiplier" && s.Solve != "steps":
		return nil, invalidf("unknown unknown %q (want epsilon, noise_multiplier or steps)", s.Solve)
	}
	if err := accounting.CheckDelta(s.Delta); err != nil {
		return nil, invalidf("delta: %v", err)
	}
	if s.Repetitions != nil {
		if _, isRDP := acc.(accounting.RDP); !isRDP {
			return nil, invalidf("tuning is counted by the rdp accountant only (Papernot & Steinke 2022), not %s", acc.Name())
		}
		if err := s.Repetitions.Check(); err != nil {
			return nil, invalid(err)
		}
		if s.MaxRatio > 0 && (s.Repetitions.Distribution != accounting.TNB || !(s.MinRatio > 0) || !(s.MaxRatio >= s.MinRatio) || math.IsInf(s.MaxRatio, 1)) {
			return nil, invalidf("DP-HyPO's density bounds need TNB repetitions and 0 < c ≤ C < ∞, have c = %v, C = %v", s.MinRatio, s.MaxRatio)
		}
	}
	return acc, nil
}

// Account answers s: it calibrates the noise multiplier (never above the
// target ε) or the largest number of steps within it (searching up to
// dpsgd.MaxSteps, and saying when it stopped there), or computes ε — by
// the chosen accountant, for DP-SGD alone or inside random-stop or DP-HyPO
// tuning. An impossible question is an error wrapping ErrInvalid; a
// cancelled search returns ctx's error.
func Account(ctx context.Context, s AccountSpec) (AccountResult, error) {
	if s.Accountant == "xiang-o" || s.Accountant == "xiang-g" {
		return accountXiang(ctx, s)
	}
	res := AccountResult{Solved: s.Solve, Delta: s.Delta, SamplingRate: s.SamplingRate, NoiseMultiplier: s.NoiseMultiplier, Steps: s.Steps}
	acc, err := s.check()
	if err != nil {
		return res, err
	}
	res.Accountant = acc.Name()
	refused := func(err error) error {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return invalid(err)
	}
	switch s.Solve {
	case "noise_multiplier":
		sigma, err := accounting.CalibrateNoise(ctx, acc, func(z float64) accounting.Event { return s.event(z, s.Steps) }, s.Epsilon, s.Delta)
		if err != nil {
			return res, refused(err)
		}
		res.NoiseMultiplier = sigma
	case "steps":
		steps, err := accounting.CalibrateSteps(ctx, acc, func(t int) accounting.Event { return s.event(s.NoiseMultiplier, t) }, s.Epsilon, s.Delta, dpsgd.MaxSteps)
		if err != nil {
			return res, refused(err)
		}
		res.Steps, res.StepsCapped = steps, steps == dpsgd.MaxSteps
	}
	g, err := acc.Epsilon(s.event(res.NoiseMultiplier, res.Steps), s.Delta)
	if err != nil {
		return res, invalid(err)
	}
	res.Epsilon, res.Order, res.EpsilonNote = finiteEpsilon(g, nil)
	res.Approximate = g.Approximate
	if s.Repetitions != nil {
		b, err := acc.Epsilon(accounting.DPSGD(res.NoiseMultiplier, s.SamplingRate, res.Steps), s.Delta)
		if err != nil {
			return res, err
		}
		res.Tuning = &TuningAccount{Repetitions: *s.Repetitions, MeanRuns: s.Repetitions.Mean(), MaxRatio: s.MaxRatio, MinRatio: s.MinRatio}
		res.Tuning.BaseEpsilon, _, _ = finiteEpsilon(b, nil)
	}
	return res, nil
}

// accountXiang answers s by Xiang et al.'s Algorithm 3 (see AccountSpec).
func accountXiang(ctx context.Context, s AccountSpec) (AccountResult, error) {
	res := AccountResult{Solved: "epsilon", Delta: s.Delta, Accountant: s.Accountant, SamplingRate: s.SamplingRate,
		NoiseMultiplier: s.NoiseMultiplier, Steps: s.Steps, Approximate: true}
	switch {
	case s.Solve != "epsilon":
		return res, invalidf("the %s accountant computes ε only", s.Accountant)
	case s.Repetitions == nil:
		return res, invalidf("the %s accountant counts random-stop tuning: it needs a distribution of the number of runs", s.Accountant)
	case s.MaxRatio > 0:
		return res, invalidf("the %s accountant does not count adaptive (DP-HyPO) tuning", s.Accountant)
	}
	if err := s.Repetitions.Check(); err != nil {
		return res, invalid(err)
	}
	if err := accounting.CheckDelta(s.Delta); err != nil {
		return res, invalidf("delta: %v", err)
	}
	reduction := s.Accountant
	mu := s.GDPMu
	if mu != 0 {
		if !(mu > 0 && mu <= accounting.MaxGaussianSelectMu) {
			return res, invalidf("μ = %v is outside (0, %d]: a larger shift leaves no meaningful privacy (one run alone at μ = %d has ε above 50 nats)", mu, accounting.MaxGaussianSelectMu, accounting.MaxGaussianSelectMu)
		}
		reduction = "gdp-mu"
	} else {
		switch {
		case !(s.SamplingRate > 0 && s.SamplingRate <= 1):
			return res, invalidf("sampling rate %v is outside (0, 1]", s.SamplingRate)
		case s.Steps < 1 || s.Steps > dpsgd.MaxSteps:
			return res, invalidf("steps %d is outside [1, %d]", s.Steps, dpsgd.MaxSteps)
		}
		if s.BaseEpsilon != 0 {
			sigma, err := calibrateRun(ctx, s.BaseEpsilon, s.Delta, s.SamplingRate, s.Steps, model.Arch{})
			if err != nil {
				return res, err
			}
			res.NoiseMultiplier = sigma
		}
		if !(res.NoiseMultiplier > 0) || math.IsInf(res.NoiseMultiplier, 1) {
			return res, invalidf("noise multiplier %v must be positive and finite", res.NoiseMultiplier)
		}
		if s.Accountant == tuning.XiangO {
			mu = tuning.XiangEvent(accounting.DPSGD(res.NoiseMultiplier, s.SamplingRate, s.Steps), *s.Repetitions).(accounting.GaussianSelect).Mu
		} else {
			mu = accounting.GDPMuUniform(s.SamplingRate, res.NoiseMultiplier, s.Steps)
		}
		if r := s.Repetitions.Distribution; r == accounting.TNB || r == accounting.Poisson {
			g, err := accounting.RDP{}.Epsilon(tuning.SelectionEvent(accounting.DPSGD(res.NoiseMultiplier, s.SamplingRate, s.Steps), *s.Repetitions, nil), s.Delta)
			res.GenericEpsilon, _, _ = finiteEpsilon(g, err)
		}
	}
	res.Mu = mu
	if !(mu <= accounting.MaxGaussianSelectMu) {
		return res, invalidf("the reduced game's μ = τ√N/σ = %.6g is above %d: the noise is too small for any meaningful privacy (one run alone at μ = %d has ε above 50 nats)", mu, accounting.MaxGaussianSelectMu, accounting.MaxGaussianSelectMu)
	}
	g, err := accounting.RDP{}.EpsilonContext(ctx, accounting.GaussianSelect{Mu: mu, Repetitions: *s.Repetitions, Reduction: reduction}, s.Delta)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return res, err
	}
	if err != nil {
		return res, invalid(err)
	}
	res.Epsilon, res.Order, res.EpsilonNote = finiteEpsilon(g, nil)
	res.Tuning = &TuningAccount{Repetitions: *s.Repetitions, MeanRuns: s.Repetitions.Mean()}
	var base accounting.Event = accounting.Gaussian{NoiseMultiplier: 1 / mu, Sensitivity: 1}
	if res.NoiseMultiplier > 0 {
		base = accounting.DPSGD(res.NoiseMultiplier, s.SamplingRate, s.Steps)
	}
	b, err := accounting.RDP{}.Epsilon(base, s.Delta)
	res.Tuning.BaseEpsilon, _, _ = finiteEpsilon(b, err)
	return res, nil
}

// calibrateRun is the noise multiplier σ such that one DP-SGD run of steps
// at sampling rate q of network arch, its privacy-spending stages (a data
// normalisation) included, is (eps, delta)-DP by RDP (dpsgd.PlannedEvent);
// an impossible target wraps ErrInvalid, cancellation returns ctx's error.
func calibrateRun(ctx context.Context, eps, delta, q float64, steps int, arch model.Arch) (float64, error) {
	if err := accounting.CheckEpsilon(eps); err != nil {
		return 0, invalidf("base epsilon: %v", err)
	}
	sigma, err := accounting.CalibrateNoise(ctx, accounting.RDP{}, func(z float64) accounting.Event {
		return dpsgd.PlannedEvent(arch, dpsgd.Config{NoiseMultiplier: z, SamplingRate: q, Steps: steps})
	}, eps, delta)
	if err != nil && !errors.Is(err, context.Canceled) {
		return 0, invalid(err)
	}
	return sigma, err
}
