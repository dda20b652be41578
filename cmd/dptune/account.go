package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/dpsgd/accounting"
	"github.com/dptune/dptune/job"
)

type accountFlags struct {
	noiseMultiplier, samplingRate, delta, epsilon float64
	steps, epochs                                 int
	accountant, repeat, adaptiveRatio             string
	eta, gamma, meanRuns                          float64
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
Tuning is counted by the rdp accountant only.`,
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
	fl.StringVar(&f.accountant, "accountant", "rdp", "rdp, pld (tightest) or gdp (central-limit approximation)")
	fl.StringVar(&f.repeat, "repeat", "", "random-stop tuning: tnb or poisson distribution of the number of runs")
	fl.Float64Var(&f.eta, "eta", 1, "TNB shape η > −1 (1: geometric, 0: logarithmic)")
	fl.Float64Var(&f.gamma, "gamma", 0, "TNB parameter γ in (0, 1) (instead of --mean-runs)")
	fl.Float64Var(&f.meanRuns, "mean-runs", 0, "expected number of runs E[K] (TNB: > 1; Poisson: μ ≥ 1)")
	fl.StringVar(&f.adaptiveRatio, "adaptive-ratio", "", "DP-HyPO density bounds C/c, e.g. 2/0.75")
	fl.BoolVar(&f.json, "json", false, "print JSON instead of text")
	return cmd
}

// validate checks the flags and turns them into the job's question.
func (f *accountFlags) validate(cmd *cobra.Command) (job.AccountSpec, error) {
	p := job.AccountSpec{NoiseMultiplier: f.noiseMultiplier, SamplingRate: f.samplingRate, Epsilon: f.epsilon, Delta: f.delta, Accountant: f.accountant}
	ch := cmd.Flags().Changed
	if _, err := job.Accountant(f.accountant, true); err != nil {
		return p, err
	}
	if !(f.samplingRate > 0 && f.samplingRate <= 1) {
		return p, usagef("--sampling-rate %v is outside (0, 1]", f.samplingRate)
	}
	if err := accounting.CheckDelta(f.delta); err != nil {
		return p, usagef("--delta: %v", err)
	}
	if ch("noise-multiplier") && (!(f.noiseMultiplier > 0) || math.IsInf(f.noiseMultiplier, 1)) {
		return p, usagef("--noise-multiplier %v must be positive and finite", f.noiseMultiplier)
	}
	if ch("steps") && ch("epochs") {
		return p, usagef("give --steps or --epochs, not both")
	}
	if ch("steps") && (f.steps < 0 || f.steps > dpsgd.MaxSteps) {
		return p, usagef("--steps %d is outside [0, %d]", f.steps, dpsgd.MaxSteps)
	}
	if ch("epochs") {
		if err := dpsgd.CheckEpochs(f.epochs, f.samplingRate); err != nil {
			return p, usagef("--epochs %d: %v", f.epochs, err)
		}
		f.steps = dpsgd.StepsForEpochs(f.epochs, f.samplingRate)
	}
	if ch("epsilon") {
		if err := accounting.CheckEpsilon(f.epsilon); err != nil {
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
	if f.repeat == "" {
		for _, name := range []string{"eta", "gamma", "mean-runs", "adaptive-ratio"} {
			if ch(name) {
				return usagef("--%s needs --repeat tnb or --repeat poisson", name)
			}
		}
		return nil
	}
	if f.accountant != "rdp" {
		return usagef("tuning (--repeat) is counted by the rdp accountant only (Papernot & Steinke 2022), not %s", f.accountant)
	}
	var rep accounting.Repetitions
	switch f.repeat {
	case accounting.TNB:
		if !(f.eta > -1) || math.IsInf(f.eta, 1) {
			return usagef("--eta %v must be greater than −1", f.eta)
		}
		switch {
		case ch("gamma") && ch("mean-runs"):
			return usagef("give --gamma or --mean-runs, not both")
		case ch("gamma"):
			if !(f.gamma > 0 && f.gamma < 1) {
				return usagef("--gamma %v is outside (0, 1)", f.gamma)
			}
			rep = accounting.TNBRepetitions(f.eta, f.gamma)
		case ch("mean-runs"):
			r, err := accounting.TNBWithMean(f.eta, f.meanRuns)
			if err != nil {
				return usagef("--mean-runs %v: a TNB's mean must be finite and above 1", f.meanRuns)
			}
			rep = r
		default:
			return usagef("--repeat tnb needs --gamma or --mean-runs")
		}
	case accounting.Poisson:
		if ch("gamma") || ch("eta") {
			return usagef("--repeat poisson takes --mean-runs, not --gamma or --eta")
		}
		if !(f.meanRuns >= 1) || math.IsInf(f.meanRuns, 1) {
			return usagef("--repeat poisson needs --mean-runs μ ≥ 1 (the bound is proved for those), have %v", f.meanRuns)
		}
		rep = accounting.PoissonRepetitions(f.meanRuns)
	default:
		return usagef("unknown --repeat %q (want tnb or poisson)", f.repeat)
	}
	p.Repetitions = &rep
	if f.adaptiveRatio != "" {
		if rep.Distribution != accounting.TNB {
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
		capped = fmt.Sprintf("  (the search stopped at its cap of %d steps: at least this many fit)", dpsgd.MaxSteps)
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
	fmt.Fprintf(w, "%-19s %s at δ = %g  (%s)%s\n", what, fmtEpsilon(r.Epsilon), r.Delta, describeAccountant(r.Accountant, r.Order), mark("epsilon"))
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
