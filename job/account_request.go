package job

import (
	"math"
	"strconv"
	"strings"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/privacy/accounting"
)

// AccountRequest is a question about DP-SGD as a person asks it (the flags
// of dptune account, by whose names Given and the errors speak): two of
// NoiseMultiplier, Steps (or Epochs) and Epsilon given, the third is
// computed, for DP-SGD alone or, with Repeat, for random-stop tuning
// (DP-HyPO's with AdaptiveRatio "C/c"); with an Accountant of Xiang et
// al.'s, ε of random-stop tuning from NoiseMultiplier or BaseEpsilon, or
// GDPMu. Spec checks it and makes the AccountSpec.
type AccountRequest struct {
	NoiseMultiplier, SamplingRate, Delta, Epsilon float64
	Steps, Epochs                                 int
	Accountant, AdaptiveRatio                     string
	BaseEpsilon, GDPMu                            float64
	Repeat                                        RepeatSettings
	// Given are the settings given explicitly, by flag name.
	Given Given
}

// Spec checks r and returns the question for Account. A question that
// cannot be asked is refused, before any computation, with an error
// wrapping ErrInvalid that names the flag at fault: not exactly two of the
// three given, values out of range, a setting of Xiang et al.'s
// accountants without one, tuning under an accountant other than RDP, a
// distribution of the number of runs RDP does not count.
func (r AccountRequest) Spec() (AccountSpec, error) {
	p := AccountSpec{NoiseMultiplier: r.NoiseMultiplier, SamplingRate: r.SamplingRate, Epsilon: r.Epsilon, Delta: r.Delta, Accountant: r.Accountant}
	g := r.Given
	if strings.HasPrefix(r.Accountant, "xiang") {
		return r.xiang(p)
	}
	for _, n := range []string{"base-epsilon", "gdp-mu"} {
		if g[n] {
			return p, invalidf("--%s is a --accountant xiang-o|xiang-g option", n)
		}
	}
	acc, err := Accountant(r.Accountant, true)
	if err != nil {
		return p, err
	}
	if !(r.SamplingRate > 0 && r.SamplingRate <= 1) {
		return p, invalidf("--sampling-rate %v is outside (0, 1]", r.SamplingRate)
	}
	if err := accounting.CheckDelta(r.Delta); err != nil {
		return p, invalidf("--delta: %v", err)
	}
	if g["noise-multiplier"] && (!(r.NoiseMultiplier > 0) || math.IsInf(r.NoiseMultiplier, 1)) {
		return p, invalidf("--noise-multiplier %v must be positive and finite", r.NoiseMultiplier)
	}
	if g["steps"] && g["epochs"] {
		return p, invalidf("give --steps or --epochs, not both")
	}
	if g["steps"] && (r.Steps < 0 || r.Steps > dpsgd.MaxSteps) {
		return p, invalidf("--steps %d is outside [0, %d]", r.Steps, dpsgd.MaxSteps)
	}
	p.Steps = r.Steps
	if g["epochs"] {
		if p.Steps, err = r.epochSteps(); err != nil {
			return p, err
		}
	}
	if g["epsilon"] {
		if err := accounting.CheckEpsilon(r.Epsilon); err != nil {
			return p, invalidf("--epsilon: %v", err)
		}
	}
	given := 0
	for _, b := range []bool{g["noise-multiplier"], g["steps"] || g["epochs"], g["epsilon"]} {
		if b {
			given++
		}
	}
	if given != 2 {
		return p, invalidf("give exactly two of --noise-multiplier, --steps (or --epochs) and --epsilon; the third is computed")
	}
	switch {
	case !g["epsilon"]:
		p.Solve = "epsilon"
	case !g["noise-multiplier"]:
		p.Solve = "noise_multiplier"
	default:
		p.Solve = "steps"
	}
	return p, r.tuning(acc, &p)
}

// epochSteps are the steps of r.Epochs epochs at r.SamplingRate.
func (r AccountRequest) epochSteps() (int, error) {
	if err := dpsgd.CheckEpochs(r.Epochs, r.SamplingRate); err != nil {
		return 0, invalidf("--epochs %d: %v", r.Epochs, err)
	}
	return dpsgd.StepsForEpochs(r.Epochs, r.SamplingRate), nil
}

// tuning sets p's tuning, if r asks about one: its number of runs
// (counted by the RDP accountant acc only, TNB or Poisson) and DP-HyPO's
// density bounds.
func (r AccountRequest) tuning(acc accounting.Accountant, p *AccountSpec) error {
	rep, err := r.Repeat.Repetitions(r.Given)
	if err != nil || rep == nil {
		if err == nil && r.Given["adaptive-ratio"] {
			return invalidf("--adaptive-ratio needs --repeat tnb")
		}
		return err
	}
	if _, isRDP := acc.(accounting.RDP); !isRDP {
		return invalidf("tuning (--repeat) is counted by the %s accountant only (Papernot & Steinke 2022), not %s", accounting.RDP{}.Name(), r.Accountant)
	}
	if rep.Distribution != accounting.TNB && rep.Distribution != accounting.Poisson {
		return invalidf("--repeat %s is counted only by --accountant xiang-o or xiang-g", rep.Distribution)
	}
	p.Repetitions = rep
	if r.AdaptiveRatio != "" {
		if rep.Distribution != accounting.TNB {
			return invalidf("--adaptive-ratio (DP-HyPO) is proved for --repeat tnb only")
		}
		c1, c2, ok := strings.Cut(r.AdaptiveRatio, "/")
		hi, err1 := strconv.ParseFloat(c1, 64)
		lo, err2 := strconv.ParseFloat(c2, 64)
		if !ok || err1 != nil || err2 != nil || !(lo > 0) || !(hi >= lo) || math.IsInf(hi, 1) {
			return invalidf("--adaptive-ratio %q must be C/c with 0 < c ≤ C, e.g. 2/0.75", r.AdaptiveRatio)
		}
		p.MaxRatio, p.MinRatio = hi, lo
	}
	return nil
}

// xiang checks a question for Xiang et al.'s bound: ε only, of random-stop
// tuning, with μ given or from σ (or ε_B), τ and steps.
func (r AccountRequest) xiang(p AccountSpec) (AccountSpec, error) {
	g := r.Given
	p.Solve = "epsilon"
	if g["epsilon"] || g["adaptive-ratio"] {
		return p, invalidf("--accountant %s computes ε of random-stop tuning: it takes no --epsilon or --adaptive-ratio", r.Accountant)
	}
	rep, err := r.Repeat.Repetitions(g)
	if err != nil {
		return p, err
	}
	if rep == nil {
		return p, invalidf("--accountant %s needs --repeat tnb|poisson|binary|fixed", r.Accountant)
	}
	p.Repetitions = rep
	if err := accounting.CheckDelta(r.Delta); err != nil {
		return p, invalidf("--delta: %v", err)
	}
	if g["gdp-mu"] {
		for _, n := range []string{"noise-multiplier", "base-epsilon", "sampling-rate", "steps", "epochs"} {
			if g[n] {
				return p, invalidf("--gdp-mu replaces --%s", n)
			}
		}
		p.GDPMu = r.GDPMu
		return p, nil
	}
	if g["noise-multiplier"] == g["base-epsilon"] {
		return p, invalidf("give --noise-multiplier or --base-epsilon (or --gdp-mu)")
	}
	if g["steps"] && g["epochs"] {
		return p, invalidf("give --steps or --epochs, not both")
	}
	p.Steps, p.BaseEpsilon = r.Steps, r.BaseEpsilon
	if g["epochs"] {
		if p.Steps, err = r.epochSteps(); err != nil {
			return p, err
		}
	}
	return p, nil
}
