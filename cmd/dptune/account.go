package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
)

// accountFlags are account's flags: the question, and how to print it.
type accountFlags struct {
	job.AccountRequest
	json bool
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
	fl.Float64Var(&f.NoiseMultiplier, "noise-multiplier", 0, "noise multiplier σ (noise std / clipping norm)")
	fl.Float64Var(&f.SamplingRate, "sampling-rate", 0, "Poisson sampling rate q in (0, 1] (expected batch / dataset size)")
	fl.IntVar(&f.Steps, "steps", 0, "number of DP-SGD steps")
	fl.IntVar(&f.Epochs, "epochs", 0, "number of epochs: steps = epochs·⌈1/q⌉ (instead of --steps)")
	fl.Float64Var(&f.Delta, "delta", 1e-5, "δ in (0, 1)")
	fl.Float64Var(&f.Epsilon, "epsilon", 0, "target ε in nats: calibrate σ (given steps) or the steps (given σ)")
	fl.StringVar(&f.Accountant, "accountant", "rdp", accounting.Help(true)+", or xiang-o / xiang-g (tuning of DP-SGD, approximate)")
	addRepeatFlags(fl, &f.Repeat)
	fl.Float64Var(&f.BaseEpsilon, "base-epsilon", 0, "xiang: calibrate σ so that one DP-SGD run is (ε_B, δ)-DP by RDP, instead of --noise-multiplier")
	fl.Float64Var(&f.GDPMu, "gdp-mu", 0, fmt.Sprintf("xiang: the reduced game's μ in (0, %d], instead of σ, τ and steps", accounting.MaxGaussianSelectMu))
	fl.StringVar(&f.AdaptiveRatio, "adaptive-ratio", "", "DP-HyPO density bounds C/c, e.g. 2/0.75")
	fl.BoolVar(&f.json, "json", false, "print JSON instead of text")
	return cmd
}

func runAccount(cmd *cobra.Command, f accountFlags) error {
	f.Given = given(cmd)
	spec, err := f.Spec()
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
	res.PrintSummary(out)
	return nil
}
