package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/bench"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/internal/registry"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/runner"
)

type auditFlags struct {
	trials                                               int
	seed                                                 uint64
	out                                                  string
	delta, confidence                                    float64
	gdpMu                                                float64
	repeat                                               repeatFlags
	noiseMultiplier, baseEpsilon, samplingRate, clipNorm float64
	steps, size                                          int
	scoreNoise                                           float64
	partitions, maxIterations                            int
	epsilon0, granularity, u0                            float64
	dataset, dataDir, model                              string
	observe                                              string
	run                                                  runnerFlags
	lr                                                   float64
}

func newAuditCmd() *cobra.Command {
	var f auditFlags
	var names []string
	for _, g := range job.AuditProtocols() {
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
	fl.IntVar(&f.trials, "trials", 100000, fmt.Sprintf("games played, %d to %d (fixed when the audit starts: a resume plays the same count)", job.MinAuditTrials, job.MaxAuditTrials))
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the trials (an audit is reproducible)")
	fl.StringVar(&f.out, "out", "out/audit", "directory for audit.json, audit.png and trials.csv")
	addRunnerFlags(fl, &f.run)
	fl.Float64Var(&f.delta, "delta", 1e-5, "δ of the bounds")
	fl.Float64Var(&f.confidence, "confidence", 0.95, "Clopper–Pearson confidence (two-sided)")
	fl.Float64Var(&f.gdpMu, "gdp-mu", 1, fmt.Sprintf("reduced: the shift μ of N(μ, 1), in (0, %d]", job.MaxGaussianSelectMu))
	f.repeat.add(fl)
	fl.Float64Var(&f.noiseMultiplier, "noise-multiplier", 1, "dpsgd, tuner, gp, grid: σ")
	fl.Float64Var(&f.baseEpsilon, "base-epsilon", 0, "dpsgd, tuner, gp, grid: calibrate σ so that one run is (ε_B, δ)-DP by RDP, instead of --noise-multiplier")
	fl.Float64Var(&f.samplingRate, "sampling-rate", 1, fmt.Sprintf("dpsgd, tuner, gp, grid: Poisson sampling rate τ, in [%g, 1]", job.MinCanarySamplingRate))
	fl.Float64Var(&f.clipNorm, "clip-norm", 1, fmt.Sprintf("dpsgd, tuner, gp, grid: clipping norm C, in (0, %g]", float64(job.MaxCanaryClipNorm)))
	fl.IntVar(&f.steps, "steps", 10, "dpsgd, tuner, gp, grid: DP-SGD steps T")
	fl.StringVar(&f.observe, "observe", "all", "dpsgd: what the adversary sees, all (every iterate: the per-step likelihood ratio) or last (the last iterate: the summed update)")
	fl.IntVar(&f.size, "size", 1, fmt.Sprintf("dpsgd, tuner, gp, grid: examples of X besides the canary (without gradient: X = ∅), 1 to %d; natural, and tuner with --dataset or --model: real training examples", job.MaxCanarySize))
	fl.StringVar(&f.dataset, "dataset", "mnist", "natural, tuner (NTCV): "+job.DatasetHelp())
	fl.StringVar(&f.dataDir, "data-dir", "", "natural, tuner: the dataset's directory (default "+job.DefaultDirHelp()+")")
	fl.StringVar(&f.model, "model", "", "natural, tuner: the network, a built-in spec or a JSON spec file (default: the dataset's)")
	fl.Float64Var(&f.lr, "lr", 0.5, "natural: learning rate")
	fl.Float64Var(&f.scoreNoise, "score-noise", 20, fmt.Sprintf("score: the discrete Gaussian's σ on the count, in (0, %g]", float64(job.MaxScoreNoise)))
	fl.IntVar(&f.partitions, "partitions", 10, "above-threshold: k")
	fl.Float64Var(&f.epsilon0, "epsilon0", 1, "above-threshold: ϵ of one iteration, nats")
	fl.Float64Var(&f.granularity, "granularity", 0.01, "above-threshold: g")
	fl.Float64Var(&f.u0, "u0", 0, "above-threshold: u₀")
	fl.IntVar(&f.maxIterations, "max-iterations", 0, "above-threshold: the cap T_max (default ⌈5·log₂((1−u₀)/g)⌉)")
	return cmd
}

// checkAuditFlags refuses, before any work, flags that protocol cannot
// play with (its registration: job.AuditProtocol), and returns whether it
// trains on data and what its adversary observes.
func checkAuditFlags(cmd *cobra.Command, protocol string, f auditFlags) (onData bool, observe string, err error) {
	g, _ := job.AuditProtocol(protocol) // none for an unknown name, which job.Audit refuses
	switch {
	case f.trials < job.MinAuditTrials || f.trials > job.MaxAuditTrials:
		return false, "", usagef("--trials %d is outside [%d, %d]", f.trials, job.MinAuditTrials, job.MaxAuditTrials)
	case !(f.confidence > 0 && f.confidence < 1):
		return false, "", usagef("--confidence %v is outside (0, 1)", f.confidence)
	case f.size < 1:
		return false, "", usagef("--size %d must be at least 1", f.size)
	}
	// Only some audits train a network on data: the others have none to
	// choose (dpsgd and gp play a Dirac gradient canary on a fixed network,
	// whatever --model would say).
	onData = g.OnData(false)
	for _, name := range []string{"model", "dataset", "data-dir", "lr"} {
		switch {
		case !cmd.Flags().Changed(name):
		case name == "lr" && g.Uses("LearningRate"):
		case name != "lr" && g.TakesData():
			onData = true
		default:
			return false, "", usagef("--%s applies to audit %s only: the %s audit trains no network of yours on data", name, auditDataProtocols(), protocol)
		}
	}
	switch {
	case len(g.Views) > 0 && !slices.Contains(g.Views, f.observe):
		return false, "", usagef("--observe %q is neither %s", f.observe, strings.Join(g.Views, " nor "))
	case len(g.Views) > 0:
		observe = f.observe
	case cmd.Flags().Changed("observe"):
		return false, "", usagef("--observe applies to audit %s only", auditViewProtocols())
	}
	// The protocol's own ranges (its registration's bounds), checked here
	// so that the message names the flag; out of them a trial used to fail
	// after the audit started.
	for _, b := range g.Bounds {
		v, err := cmd.Flags().GetFloat64(b.Flag)
		if err != nil {
			return false, "", err
		}
		if err := b.Check("--"+b.Flag, v); err != nil {
			return false, "", usageError{err}
		}
	}
	return onData, observe, nil
}

// auditSpec is the audit of protocol that f asks for, its flags checked.
func auditSpec(cmd *cobra.Command, protocol string, f auditFlags) (job.AuditSpec, error) {
	onData, observe, err := checkAuditFlags(cmd, protocol, f)
	if err != nil {
		return job.AuditSpec{}, err
	}
	g, _ := job.AuditProtocol(protocol)
	spec := job.AuditSpec{Protocol: protocol, Trials: f.trials, Seed: f.seed, Delta: f.delta, Confidence: f.confidence,
		Mu: f.gdpMu, NoiseMultiplier: f.noiseMultiplier, BaseEpsilon: f.baseEpsilon, SamplingRate: f.samplingRate,
		ClipNorm: f.clipNorm, Steps: f.steps, Size: f.size, ScoreNoise: f.scoreNoise, Observe: observe,
		CSV: filepath.Join(f.out, "trials.csv")}
	if onData {
		src, err := job.Dataset(f.dataset, f.dataDir)
		if err == nil {
			src, err = withModel(src, f.model)
		}
		if err != nil {
			return job.AuditSpec{}, err
		}
		spec.Data = src
		if g.Uses("LearningRate") {
			spec.LearningRate = f.lr
		}
	}
	for field, why := range g.Refuses {
		if flag := auditFieldFlags[field]; flag != "" && cmd.Flags().Changed(flag) {
			return job.AuditSpec{}, usagef("--%s does not apply to audit %s: %s", flag, protocol, why)
		}
	}
	if g.Uses("GPOptions") {
		spec.GPOptions = job.DefaultAuditGPOptions()
	}
	if g.Uses("Repetitions") {
		rep, err := f.repeat.parse(cmd)
		if err != nil {
			return job.AuditSpec{}, err
		}
		if rep == nil {
			return job.AuditSpec{}, usagef("audit %s needs --repeat tnb|poisson|binary|fixed", protocol)
		}
		if rep.L > job.MaxRuns {
			flag := "--runs"
			if rep.Distribution == job.RepeatBinary {
				flag = "--binary-l"
			}
			return job.AuditSpec{}, usagef("%s %d is above %d, the most runs a tuning plays", flag, rep.L, job.MaxRuns)
		}
		spec.Repetitions = *rep
	}
	if g.Uses("AboveThreshold") {
		if f.maxIterations == 0 {
			f.maxIterations = job.DefaultAuditMaxIterations(f.u0, f.granularity)
		}
		d := &spec.AboveThreshold
		d.Partitions, d.Epsilon0, d.Granularity, d.U0, d.MaxIterations = f.partitions, f.epsilon0, f.granularity, f.u0, f.maxIterations
	}
	return spec, nil
}

func runAudit(cmd *cobra.Command, protocol string, f auditFlags) error {
	spec, err := auditSpec(cmd, protocol, f)
	if err != nil {
		return err
	}
	if err := f.run.check(cmd); err != nil {
		return err
	}
	if err := job.CheckOut(f.out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	end := func(bool) error { return nil }
	spec.OpenRunner = func(ctx context.Context) (runner.Runner, error) {
		run, e, err := f.run.open(ctx, cmd, "audit "+protocol, f.out)
		end = e
		return run, err
	}
	w := cmd.ErrOrStderr()
	start := time.Now()
	b := newPhaseBar(w, f.trials, "audit trials")
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
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return errors.Join(err, closeErr)
	}
	// Both files go through a temporary file of a random name renamed into
	// place: a symbolic link planted in --out is replaced, not written
	// through.
	if err := fsx.WriteFileAtomic(filepath.Join(f.out, "audit.json"), append(js, '\n'), 0o644); err != nil {
		return errors.Join(err, closeErr)
	}
	if err := fsx.WritePathAtomic(filepath.Join(f.out, "audit.png"), 0o644, func(name string) error {
		return bench.PlotAudit(res.Stats0, res.Stats1, res.Detail.Threshold, res.EpsilonLower, res.EpsilonUpper, name)
	}); err != nil {
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
	fmt.Fprintf(w, "wall time      %.1f s; audit.json, audit.png and trials.csv in %s\n", time.Since(start).Seconds(), f.out)
	return closeErr
}

// auditFieldFlags are the flags that set the audit settings a protocol may
// refuse (its registration's Refuses), by the setting's name.
var auditFieldFlags = map[string]string{"Repetitions": "repeat"}

// auditProtocolsHelp lists the registered audit protocols for audit's
// --help: each name, its help beside it.
func auditProtocolsHelp() string {
	var b strings.Builder
	for _, g := range job.AuditProtocols() {
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

// auditDataProtocols names the audit protocols that train on data of the
// user's, for an error: "natural (and, but for --lr, tuner)".
func auditDataProtocols() string {
	var all, noLR []string
	for _, g := range job.AuditProtocols() {
		switch {
		case g.TakesData() && g.Uses("LearningRate"):
			all = append(all, g.Name)
		case g.TakesData():
			noLR = append(noLR, g.Name)
		}
	}
	if len(noLR) == 0 {
		return registry.Either(all)
	}
	return fmt.Sprintf("%s (and, but for --lr, %s)", registry.Either(all), registry.Either(noLR))
}

// auditViewProtocols names the audit protocols whose adversary's view can
// be chosen (--observe).
func auditViewProtocols() string {
	var names []string
	for _, g := range job.AuditProtocols() {
		if len(g.Views) > 0 {
			names = append(names, g.Name)
		}
	}
	return registry.Either(names)
}
