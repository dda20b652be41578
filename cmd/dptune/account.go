package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/job"
)

type accountFlags struct {
	noiseMultiplier, samplingRate, delta, epsilon float64
	steps, epochs                                 int
	accountant, adaptiveRatio                     string
	baseEpsilon, gdpMu                            float64
	repeat                                        repeatFlags
	json                                          bool
}

func newAccountCmd() *cobra.Command {
	var f accountFlags
	cmd := &cobra.Command{
		Use:   "account",
		Short: "ε of DP-SGD (alone or inside random-stop tuning), or the σ or steps a budget allows",
		Long: `account answers one of three questions about DP-SGD with Poisson sampling
rate q, given two of noise multiplier σ, number of steps, and target ε:

  ε of σ and steps:   dptune account --noise-multiplier 1.1 --sampling-rate 0.0042667 --steps 14063
  σ for ε and steps:  dptune account --epsilon 3 --sampling-rate 0.0042667 --epochs 10
  steps for ε and σ:  dptune account --epsilon 3 --noise-multiplier 1.1 --sampling-rate 0.0042667

With --repeat the question is about random-stop tuning whose every run is
that DP-SGD run: K ~ TNB(η, γ) (--repeat tnb, set by --gamma or --mean-runs)
or Poisson (--repeat poisson --mean-runs μ), counted by Papernot & Steinke
2022; --adaptive-ratio C/c makes it DP-HyPO (Wang et al. 2023, Theorem 1).
Tuning is counted by the rdp accountant only.

--accountant xiang-o or xiang-g counts random-stop tuning of DP-SGD by Xiang
et al.'s Algorithm 3 ("Selection leaks privacy", §5): the whole run reduced to
one Gaussian shift μ = τ√N/σ (xiang-o, their eq. 19) or μ from the GDP
central limit theorem (xiang-g, their Corollary 2), or --gdp-mu μ given, and
K ~ --repeat tnb|poisson|binary|fixed. It is an APPROXIMATION (a law-of-large-
numbers or central-limit step), labelled as such, never a default:

  dptune account --accountant xiang-o --repeat binary --binary-l 100 --binary-s 0.01 \
      --base-epsilon 2 --sampling-rate 1 --steps 500`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runAccount(cmd, f) },
	}
	fl := cmd.Flags()
	fl.Float64Var(&f.noiseMultiplier, "noise-multiplier", 0, "noise multiplier σ (noise std / clipping norm)")
	fl.Float64Var(&f.samplingRate, "sampling-rate", 0, "Poisson sampling rate q in (0, 1] (expected batch / dataset size)")
	fl.IntVar(&f.steps, "steps", 0, "number of DP-SGD steps")
	fl.IntVar(&f.epochs, "epochs", 0, "number of epochs: steps = epochs·⌈1/q⌉ (instead of --steps)")
	fl.Float64Var(&f.delta, "delta", 1e-5, "δ in (0, 1)")
	fl.Float64Var(&f.epsilon, "epsilon", 0, "target ε in nats: calibrate σ (given steps) or the steps (given σ)")
	fl.StringVar(&f.accountant, "accountant", "rdp", job.AccountantHelp(true)+", or xiang-o / xiang-g (tuning of DP-SGD, approximate)")
	f.repeat.add(fl)
	fl.Float64Var(&f.baseEpsilon, "base-epsilon", 0, "xiang: calibrate σ so that one DP-SGD run is (ε_B, δ)-DP by RDP, instead of --noise-multiplier")
	fl.Float64Var(&f.gdpMu, "gdp-mu", 0, fmt.Sprintf("xiang: the reduced game's μ in (0, %d], instead of σ, τ and steps", job.MaxGaussianSelectMu))
	fl.StringVar(&f.adaptiveRatio, "adaptive-ratio", "", "DP-HyPO density bounds C/c, e.g. 2/0.75")
	fl.BoolVar(&f.json, "json", false, "print JSON instead of text")
	return cmd
}

// validate checks the flags and turns them into the job's question.
func (f *accountFlags) validate(cmd *cobra.Command) (job.AccountSpec, error) {
	p := job.AccountSpec{NoiseMultiplier: f.noiseMultiplier, SamplingRate: f.samplingRate, Epsilon: f.epsilon, Delta: f.delta, Accountant: f.accountant}
	ch := cmd.Flags().Changed
	if strings.HasPrefix(f.accountant, "xiang") {
		return f.validateXiang(cmd, p)
	}
	for _, n := range []string{"base-epsilon", "gdp-mu"} {
		if ch(n) {
			return p, usagef("--%s is a --accountant xiang-o|xiang-g option", n)
		}
	}
	if _, err := job.Accountant(f.accountant, true); err != nil {
		return p, err
	}
	if !(f.samplingRate > 0 && f.samplingRate <= 1) {
		return p, usagef("--sampling-rate %v is outside (0, 1]", f.samplingRate)
	}
	if err := job.CheckDelta(f.delta); err != nil {
		return p, usagef("--delta: %v", err)
	}
	if ch("noise-multiplier") && (!(f.noiseMultiplier > 0) || math.IsInf(f.noiseMultiplier, 1)) {
		return p, usagef("--noise-multiplier %v must be positive and finite", f.noiseMultiplier)
	}
	if ch("steps") && ch("epochs") {
		return p, usagef("give --steps or --epochs, not both")
	}
	if ch("steps") && (f.steps < 0 || f.steps > job.MaxSteps) {
		return p, usagef("--steps %d is outside [0, %d]", f.steps, job.MaxSteps)
	}
	if ch("epochs") {
		if err := job.CheckEpochs(f.epochs, f.samplingRate); err != nil {
			return p, usagef("--epochs %d: %v", f.epochs, err)
		}
		f.steps = job.StepsForEpochs(f.epochs, f.samplingRate)
	}
	if ch("epsilon") {
		if err := job.CheckEpsilon(f.epsilon); err != nil {
			return p, usagef("--epsilon: %v", err)
		}
	}
	given := 0
	for _, g := range []bool{ch("noise-multiplier"), ch("steps") || ch("epochs"), ch("epsilon")} {
		if g {
			given++
		}
	}
	if given != 2 {
		return p, usagef("give exactly two of --noise-multiplier, --steps (or --epochs) and --epsilon; the third is computed")
	}
	p.Steps = f.steps
	switch {
	case !ch("epsilon"):
		p.Solve = "epsilon"
	case !ch("noise-multiplier"):
		p.Solve = "noise_multiplier"
	default:
		p.Solve = "steps"
	}
	return p, f.validateTuning(cmd, &p)
}

func (f *accountFlags) validateTuning(cmd *cobra.Command, p *job.AccountSpec) error {
	ch := cmd.Flags().Changed
	rep, err := f.repeat.parse(cmd)
	if err != nil || rep == nil {
		if err == nil && ch("adaptive-ratio") {
			return usagef("--adaptive-ratio needs --repeat tnb")
		}
		return err
	}
	if f.accountant != "rdp" {
		return usagef("tuning (--repeat) is counted by the rdp accountant only (Papernot & Steinke 2022), not %s", f.accountant)
	}
	if rep.Distribution != job.RepeatTNB && rep.Distribution != job.RepeatPoisson {
		return usagef("--repeat %s is counted only by --accountant xiang-o or xiang-g", rep.Distribution)
	}
	p.Repetitions = rep
	if f.adaptiveRatio != "" {
		if rep.Distribution != job.RepeatTNB {
			return usagef("--adaptive-ratio (DP-HyPO) is proved for --repeat tnb only")
		}
		c1, c2, ok := strings.Cut(f.adaptiveRatio, "/")
		hi, err1 := strconv.ParseFloat(c1, 64)
		lo, err2 := strconv.ParseFloat(c2, 64)
		if !ok || err1 != nil || err2 != nil || !(lo > 0) || !(hi >= lo) || math.IsInf(hi, 1) {
			return usagef("--adaptive-ratio %q must be C/c with 0 < c ≤ C, e.g. 2/0.75", f.adaptiveRatio)
		}
		p.MaxRatio, p.MinRatio = hi, lo
	}
	return nil
}

// validateXiang checks the flags of a question for Xiang et al.'s bound:
// ε only, of --repeat tuning, with μ given or from σ (or ε_B), τ and steps.
func (f *accountFlags) validateXiang(cmd *cobra.Command, p job.AccountSpec) (job.AccountSpec, error) {
	ch := cmd.Flags().Changed
	p.Solve = "epsilon"
	if ch("epsilon") || ch("adaptive-ratio") {
		return p, usagef("--accountant %s computes ε of random-stop tuning: it takes no --epsilon or --adaptive-ratio", f.accountant)
	}
	rep, err := f.repeat.parse(cmd)
	if err != nil {
		return p, err
	}
	if rep == nil {
		return p, usagef("--accountant %s needs --repeat tnb|poisson|binary|fixed", f.accountant)
	}
	p.Repetitions = rep
	if err := job.CheckDelta(f.delta); err != nil {
		return p, usagef("--delta: %v", err)
	}
	if ch("gdp-mu") {
		for _, n := range []string{"noise-multiplier", "base-epsilon", "sampling-rate", "steps", "epochs"} {
			if ch(n) {
				return p, usagef("--gdp-mu replaces --%s", n)
			}
		}
		p.GDPMu = f.gdpMu
		return p, nil
	}
	if ch("noise-multiplier") == ch("base-epsilon") {
		return p, usagef("give --noise-multiplier or --base-epsilon (or --gdp-mu)")
	}
	if ch("steps") && ch("epochs") {
		return p, usagef("give --steps or --epochs, not both")
	}
	if ch("epochs") {
		if err := job.CheckEpochs(f.epochs, f.samplingRate); err != nil {
			return p, usagef("--epochs %d: %v", f.epochs, err)
		}
		f.steps = job.StepsForEpochs(f.epochs, f.samplingRate)
	}
	p.Steps, p.BaseEpsilon = f.steps, f.baseEpsilon
	return p, nil
}

func runAccount(cmd *cobra.Command, f accountFlags) error {
	spec, err := f.validate(cmd)
	if err != nil {
		return err
	}
	res, err := job.Account(cmd.Context(), spec)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if f.json {
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	printAccount(out, res)
	return nil
}

func printAccount(w io.Writer, r job.AccountResult) {
	mark := func(field string) string {
		if r.Solved == field {
			return "  ← computed"
		}
		return ""
	}
	fmt.Fprintf(w, "noise multiplier σ  %.6g%s\n", r.NoiseMultiplier, mark("noise_multiplier"))
	fmt.Fprintf(w, "sampling rate q     %.6g\n", r.SamplingRate)
	capped := ""
	if r.StepsCapped {
		capped = fmt.Sprintf("  (the search stopped at its cap of %d steps: at least this many fit)", job.MaxSteps)
	}
	fmt.Fprintf(w, "steps               %d%s%s\n", r.Steps, mark("steps"), capped)
	if t := r.Tuning; t != nil {
		fmt.Fprintf(w, "tuning runs K       %s, E[K] = %.4g\n", t.Repetitions, t.MeanRuns)
		if t.MaxRatio > 0 {
			fmt.Fprintf(w, "adaptive (DP-HyPO)  densities within [%g, %g] × the prior\n", t.MinRatio, t.MaxRatio)
		}
		fmt.Fprintf(w, "one run alone       ε = %s\n", fmtEpsilon(t.BaseEpsilon))
	}
	what := "ε"
	if r.Tuning != nil {
		what = "ε of tuning"
	}
	if r.Mu > 0 {
		fmt.Fprintf(w, "reduced game μ      %.6g\n", r.Mu)
	}
	fmt.Fprintf(w, "%-19s %s at δ = %g  (%s)%s\n", what, fmtEpsilon(r.Epsilon), r.Delta, job.DescribeAccountant(r.Accountant, r.Order), mark("epsilon"))
	if r.GenericEpsilon != nil {
		fmt.Fprintf(w, "Papernot–Steinke   ε = %s (the generic bound, for comparison)\n", fmtEpsilon(r.GenericEpsilon))
	}
}

// fmtEpsilon prints ε in nats: four decimals, or six significant digits
// when huge; +Inf when unbounded (nil).
func fmtEpsilon(eps *float64) string {
	switch {
	case eps == nil:
		return "+Inf"
	case *eps >= 1e6:
		return fmt.Sprintf("%.6g", *eps)
	}
	return fmt.Sprintf("%.4f", *eps)
}
