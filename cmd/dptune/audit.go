package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/audit"
	"github.com/dptune/dptune/bench"
	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/registry"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/noise"
	"github.com/dptune/dptune/runner"
)

// auditFlags are audit's flags: the request and the runner.
type auditFlags struct {
	job.AuditRequest
	run runnerFlags
}

func newAuditCmd() *cobra.Command {
	var f auditFlags
	var names []string
	for _, g := range audit.Games(nil) {
		names = append(names, g.Name)
	}
	names = append(names, "one-run")
	cmd := &cobra.Command{
		Use:   "audit " + strings.Join(names, "|"),
		Short: "Privacy audit: a lower bound ε_L on ε from the distinguishing game, beside the claimed ε_U",
		Long: `audit plays Xiang et al.'s distinguishing game ("Selection leaks privacy",
Algorithm 1) --trials times on all cores: a fair coin chooses X or X′, the
protocol runs, the adversary scores its output. ε_L follows from eq. (4) with
Clopper–Pearson bounds (two-sided, --confidence) on the false-positive and
false-negative rates, at a threshold chosen on one half of the trials and
evaluated on the other. A claim ε_U below ε_L means a bug that under-reports ε.

` + auditProtocolsHelp() + `  one-run          one real training run with train's flags and --canaries
                   (Steinke, Nasr & Jagielski 2023): see dptune audit one-run --help

--dataset, --data-dir, --model and --lr belong to natural (and but for --lr
to tuner): the dpsgd and gp audits, and tuner without them, play a Dirac
gradient canary on a fixed network with X = ∅, and every other protocol
trains no network; they are refused with these flags.

Writes DIR/audit.json (epsilon_lower, confidence, delta, trials,
epsilon_upper by accountant; for dpsgd also gdp_mu_estimate and
epsilon_gdp_estimate, the μ-GDP fitted to the statistics as Nasr et al. 2023
report it: an estimate, never a bound), DIR/audit.png, and the trials to
DIR/trials.csv.
A rerun with the same settings resumes them; the file's header records the
protocol, every parameter, δ, the confidence, the seed and --trials, and a
rerun that differs in any of them is refused (exit 2), naming the field.
audit.json and audit.png are written through a temporary file renamed into
place; a trial file that is not a regular file (a FIFO) is refused.
A fixed or binary number of runs is at most 2^20 (the most a tuning plays).`,
		Example: `  dptune audit reduced --gdp-mu 1 --repeat tnb --eta 1 --mean-runs 10 --trials 1000000 --out out/audit-reduced
  dptune audit dpsgd --base-epsilon 2 --sampling-rate 1 --steps 50 --trials 4000 --out out/audit-dpsgd`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usagef("audit takes one protocol (%s), have %d arguments", registry.Either(names), len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error { return runAudit(cmd, args[0], f) },
	}
	cmd.AddCommand(newAuditOneRunCmd())
	fl := cmd.Flags()
	fl.IntVar(&f.Trials, "trials", 100000, fmt.Sprintf("games played, %d to %d (fixed when the audit starts: a resume plays the same count)", job.MinAuditTrials, audit.MaxTrials))
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of the trials (an audit is reproducible)")
	fl.StringVar(&f.Out, "out", "out/audit", "directory for audit.json, audit.png and trials.csv")
	addRunnerFlags(fl, &f.run)
	fl.Float64Var(&f.Delta, "delta", 1e-5, "δ of the bounds")
	fl.Float64Var(&f.Confidence, "confidence", 0.95, "Clopper–Pearson confidence (two-sided)")
	fl.Float64Var(&f.Mu, "gdp-mu", 1, fmt.Sprintf("reduced: the shift μ of N(μ, 1), in (0, %d]", accounting.MaxGaussianSelectMu))
	addRepeatFlags(fl, &f.Repeat)
	fl.Float64Var(&f.NoiseMultiplier, "noise-multiplier", 1, "dpsgd, tuner, gp, grid: σ")
	fl.Float64Var(&f.BaseEpsilon, "base-epsilon", 0, "dpsgd, tuner, gp, grid: calibrate σ so that one run is (ε_B, δ)-DP by RDP, instead of --noise-multiplier")
	fl.Float64Var(&f.SamplingRate, "sampling-rate", 1, fmt.Sprintf("dpsgd, tuner, gp, grid: Poisson sampling rate τ, in [%g, 1]", audit.MinCanarySamplingRate))
	fl.Float64Var(&f.ClipNorm, "clip-norm", 1, fmt.Sprintf("dpsgd, tuner, gp, grid: clipping norm C, in (0, %g]", float64(audit.MaxCanaryClipNorm)))
	fl.IntVar(&f.Steps, "steps", 10, "dpsgd, tuner, gp, grid: DP-SGD steps T")
	fl.StringVar(&f.Observe, "observe", "all", "dpsgd: what the adversary sees, all (every iterate: the per-step likelihood ratio) or last (the last iterate: the summed update)")
	fl.IntVar(&f.Size, "size", 1, fmt.Sprintf("dpsgd, tuner, gp, grid: examples of X besides the canary (without gradient: X = ∅), 1 to %d; natural, and tuner with --dataset or --model: real training examples", audit.MaxCanarySize))
	fl.StringVar(&f.Dataset, "dataset", "mnist", "natural, tuner (NTCV): "+data.NamesList())
	fl.StringVar(&f.DataDir, "data-dir", "", "natural, tuner: the dataset's directory (default "+job.DefaultDirHelp()+")")
	fl.StringVar(&f.Model, "model", "", "natural, tuner: the network, a built-in spec or a JSON spec file (default: the dataset's)")
	fl.Float64Var(&f.LearningRate, "lr", 0.5, "natural: learning rate")
	fl.Float64Var(&f.ScoreNoise, "score-noise", 20, fmt.Sprintf("score: the discrete Gaussian's σ on the count, in (0, %g]", float64(noise.MaxDiscreteSigma)))
	fl.IntVar(&f.Partitions, "partitions", 10, "above-threshold: k")
	fl.Float64Var(&f.Epsilon0, "epsilon0", 1, "above-threshold: ϵ of one iteration, nats")
	fl.Float64Var(&f.Granularity, "granularity", 0.01, "above-threshold: g")
	fl.Float64Var(&f.U0, "u0", 0, "above-threshold: u₀")
	fl.IntVar(&f.MaxIterations, "max-iterations", 0, "above-threshold: the cap T_max (default ⌈5·log₂((1−u₀)/g)⌉)")
	return cmd
}

func runAudit(cmd *cobra.Command, protocol string, f auditFlags) error {
	f.Protocol, f.Given = protocol, given(cmd)
	spec, err := f.Spec()
	if err != nil {
		return err
	}
	if err := f.run.check(cmd); err != nil {
		return err
	}
	if err := job.CheckOut(f.Out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	end := func(bool) error { return nil }
	spec.OpenRunner = func(ctx context.Context) (runner.Runner, error) {
		run, e, err := f.run.open(ctx, cmd, "audit "+protocol, f.Out)
		end = e
		return run, err
	}
	w := cmd.ErrOrStderr()
	start := time.Now()
	b := newPhaseBar(w, f.Trials, "audit trials")
	spec.Progress = func(done, _ int) { b.Set(done) }
	res, err := job.Audit(cmd.Context(), spec)
	// The invocation is closed (or left to resume) before anything is
	// written; an error closing it is returned once the results are out.
	closeErr := end(errors.Is(err, context.Canceled))
	if err != nil {
		err = errors.Join(err, closeErr)
	}
	b.Close()
	if err != nil {
		return err
	}
	if err := bench.WriteAudit(f.Out, res); err != nil {
		return errors.Join(err, closeErr)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "ε_L = %.4f  (%g%% confidence, δ = %g, %d trials; FP ≤ %.4g, FN ≤ %.4g at threshold %.4g)\n",
		res.EpsilonLower, 100*res.Confidence, res.Delta, res.Trials, res.Detail.FPUpper, res.Detail.FNUpper, res.Detail.Threshold)
	for _, name := range []string{"rdp", "pld", "basic", "xiang-o"} {
		if v, ok := res.EpsilonUpper[name]; ok {
			verdict := "holds"
			if res.EpsilonLower > v {
				verdict = "VIOLATED: the claim is below the audit's lower bound"
			}
			fmt.Fprintf(out, "ε_U %-8s %.4f  %s\n", name, v, verdict)
		}
	}
	if res.EpsilonGDPEstimate != nil {
		fmt.Fprintf(out, "ε (GDP fit)  %.4f  an estimate, not a bound: μ-GDP with μ = %.4f fitted to the statistics (Nasr et al. 2023)\n",
			*res.EpsilonGDPEstimate, *res.GDPMuEstimate)
	}
	fmt.Fprintf(w, "wall time      %.1f s; audit.json, audit.png and trials.csv in %s\n", time.Since(start).Seconds(), f.Out)
	return closeErr
}

// auditProtocolsHelp lists the registered audit protocols for audit's
// --help: each name, its help beside it.
func auditProtocolsHelp() string {
	var b strings.Builder
	for _, g := range audit.Games(nil) {
		for i, line := range strings.Split(g.Help, "\n") {
			name := ""
			if i == 0 {
				name = g.Name
			}
			fmt.Fprintf(&b, "  %-17s%s\n", name, line)
		}
	}
	return b.String()
}
