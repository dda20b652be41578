package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/bench"
	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/job"
)

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Reproducible measurements",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBenchPerSampleCmd(), newBenchTunersCmd(), newBenchDoublingCmd(), newBenchAuditCmd(), newBenchVoteCmd(), newBenchCompareCmd(), newBenchReportCmd(), newBenchScatterCmd(), newBenchSeedsCmd())
	return cmd
}

// benchPerSampleFlags are bench persample's flags: the request, its data
// and network.
type benchPerSampleFlags struct {
	bench.PerSampleRequest
	dataset, dataDir, model, featureCache string
	seed                                  uint64
	torch                                 bool
	torchReq                              bench.TorchRequest
}

func newBenchPerSampleCmd() *cobra.Command {
	var f benchPerSampleFlags
	cmd := &cobra.Command{
		Use:   "persample",
		Short: "What per-sample gradients cost: DP-SGD vs non-private steps, by phase and layer",
		Long: `persample times full training steps on the real data — Poisson sampling,
forward, per-sample gradients, clipping, noise, update — for DP-SGD and for
non-private SGD on the same engine, at each expected batch size, and prints
examples per second, ms per step, the DP/non-private ratio, the time per phase
and per layer, allocations per step and the peak resident memory. A network
with a scatter front end is timed on its features, computed once per dataset
into --feature-cache (as train does), not in each step.

With --torch it runs the PyTorch reference (--torch-reference, under Debian's
python3-torch: make torch-deps) beside it in one sitting: --rounds rounds, each
the reference's non-private, torch.func and hooks DP-SGD steps then dptune's, at
the same batch size, steps and threads (GOMAXPROCS), and prints each round's
examples per second, their ranges, dptune's DP-SGD over torch.func and over
PyTorch's non-private step, and its fraction of the FMA peak, with the CPU, the
GEMM kernel and the load average. The reference defines these networks:
` + strings.Join(bench.TorchNetworkNames(), ", ") + ` (make bench-torch-side runs all three).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("rounds") && !f.torch {
				return usagef("--rounds needs --torch")
			}
			return runBenchPerSample(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataset, "dataset", "mnist", data.NamesList())
	fl.StringVar(&f.dataDir, "data-dir", "", "directory with the dataset's files (default "+job.DefaultDirHelp()+")")
	addModelFlag(fl, &f.model)
	fl.StringVar(&f.featureCache, "feature-cache", job.DefaultFeatureCache(), "curator directory keeping the features of a network with a scatter front end, computed once per dataset (they are the private data, transformed: created 0700, files 0600); empty: compute them on every run")
	fl.IntSliceVar(&f.BatchSizes, "batch-size", []int{256}, "expected batch sizes, e.g. 64,128,256,512")
	fl.IntVar(&f.Steps, "steps", 50, "measured steps per batch size and mode")
	fl.IntVar(&f.Warmup, "warmup", 5, "unmeasured steps before them")
	fl.StringVar(&f.JSON, "json", "", "also write the figures to this JSON file")
	fl.StringVar(&f.Plot, "plot", "", "also draw them to this PNG file")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the initialisation, sampling and noise")
	fl.BoolVar(&f.torch, "torch", false, "run the PyTorch reference beside dptune, in alternating rounds, and print the ratios (needs Debian's python3-torch: make torch-deps)")
	fl.IntVar(&f.torchReq.Rounds, "rounds", 2, "rounds of --torch, each the PyTorch reference then dptune")
	fl.StringVar(&f.torchReq.Reference, "torch-reference", "", "the PyTorch reference script for --torch, required with it (make bench-torch-side passes the Makefile's TORCH_REF)")
	fl.StringVar(&f.torchReq.Python, "python", bench.DefaultPython, "interpreter that runs --torch-reference, with PyTorch")
	return cmd
}

func runBenchPerSample(cmd *cobra.Command, f benchPerSampleFlags) error {
	src, err := job.Dataset(f.dataset, f.dataDir)
	if err == nil {
		src, err = withModel(src, f.model)
	}
	if err != nil {
		return err
	}
	if err := f.Check(src.NominalN); err != nil {
		return err
	}
	if f.torch {
		if err := f.torchReq.Check(cmd.Context(), src.Arch, f.BatchSizes); err != nil {
			return err
		}
	}
	w := cmd.ErrOrStderr()
	src.Features = job.FeatureCache{Dir: f.featureCache, Progress: featureProgress(w)}
	train, _, err := src.LoadInputs(cmd.Context(), nil)
	if err != nil {
		return err
	}
	cfg := bench.PerSampleConfig{
		Train: train, Arch: src.Arch, BatchSizes: f.BatchSizes, Steps: f.Steps, Warmup: f.Warmup, Seed: f.seed,
		Progress: func(b int, mode string) {
			fmt.Fprintf(w, "batch %d, %s: %d + %d steps\n", b, mode, f.Warmup, f.Steps)
		},
	}
	var rep bench.PerSampleReport
	if f.torch {
		rep, err = bench.PerSampleTorch(cmd.Context(), cfg, f.torchReq, func(s string) { fmt.Fprintln(w, s) })
	} else {
		rep, err = bench.PerSample(cmd.Context(), cfg)
	}
	if len(rep.Results) > 0 {
		printPerSample(cmd.OutOrStdout(), rep)
		if rep.Torch != nil {
			printTorch(cmd.OutOrStdout(), *rep.Torch)
		}
		if werr := f.Write(rep); werr != nil {
			return werr
		}
	}
	return err
}

func printPerSample(out io.Writer, rep bench.PerSampleReport) {
	fmt.Fprintf(out, "%s (%s, %d parameters), %d steps per row, GOMAXPROCS %d, load average %s → %s\n\n",
		rep.Dataset, rep.Arch, rep.Parameters, rep.Steps, rep.GOMAXPROCS, rep.LoadAvg[0], rep.LoadAvg[1])
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(out, "%.1f MFLOP per example (GEMMs of a training step), peak %.1f GFLOP/s (0: unknown)\n\n", rep.FLOPsPerExample/1e6, rep.PeakGFLOPs)
	fmt.Fprintln(tw, "batch\tmode\texamples/s\tms/step\tDP/non-private\tGFLOP/s\tof peak\tallocs/step\tKB/step\t")
	row := func(b int, mode string, m bench.ModeResult, ratio string) {
		fmt.Fprintf(tw, "%d\t%s\t%.0f\t%.2f\t%s\t%.1f\t%.1f%%\t%.1f\t%.1f\t\n", b, mode, m.ExamplesPerSecond, m.MsPerStep, ratio,
			m.GFLOPs, 100*m.PeakFraction, m.AllocsPerStep, m.BytesPerStep/1024)
	}
	for _, r := range rep.Results {
		row(r.BatchSize, "non-private", r.NonPrivate, "")
		row(r.BatchSize, "DP-SGD, fast noise", r.DP, fmt.Sprintf("%.3f", r.DPOverNonPrivate))
		row(r.BatchSize, "DP-SGD, secure noise", r.DPSecure, fmt.Sprintf("%.3f", r.DPSecure.MsPerStep/r.NonPrivate.MsPerStep))
	}
	tw.Flush()
	phases := []string{"sampling", "forward", "backward", "per_sample", "clip", "noise", "update"}
	fmt.Fprintln(out, "\nDP-SGD time per phase, ms/step (engine phases averaged over its workers):")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "batch\t%s\t\n", strings.Join(phases, "\t"))
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%d", r.BatchSize)
		for _, ph := range phases {
			fmt.Fprintf(tw, "\t%.2f", r.DP.Phases[ph])
		}
		fmt.Fprintln(tw, "\t")
	}
	tw.Flush()
	fmt.Fprintln(out, "\nDP-SGD time per layer, ms/step, forward / backward (with per-example gradients):")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	layers := rep.Layers
	fmt.Fprintf(tw, "batch\t%s\t\n", strings.Join(layers, "\t"))
	for _, r := range rep.Results {
		fmt.Fprintf(tw, "%d", r.BatchSize)
		for _, l := range layers {
			fmt.Fprintf(tw, "\t%.2f / %.2f", r.DP.LayersForward[l], r.DP.LayersBackward[l])
		}
		fmt.Fprintln(tw, "\t")
	}
	tw.Flush()
	for _, r := range rep.Results {
		fmt.Fprintf(out, "\nsecure noise (the default without --seed) costs %.2f ms per DP-SGD step at batch %d (%.3f× the fast-noise step; noise phase %.2f → %.2f ms)",
			r.DPSecure.MsPerStep-r.DP.MsPerStep, r.BatchSize, r.SecureOverFast, r.DP.Phases["noise"], r.DPSecure.Phases["noise"])
	}
	fmt.Fprintf(out, "\n\npeak resident memory %.0f MB\n", rep.PeakRSSMB)
}

// printTorch prints the PyTorch comparison: each round, the ranges and
// the ratios.
func printTorch(out io.Writer, c bench.TorchComparison) {
	version := ""
	if len(c.Rounds) > 0 {
		version = c.Rounds[0].PyTorch.Version
	}
	fmt.Fprintf(out, "\n%s beside the PyTorch reference (%s, PyTorch %s), batch %d, %d timed steps per mode, %d threads each, %d rounds alternating (PyTorch, then dptune)\n",
		c.Network, c.Reference, version, c.BatchSize, c.Steps, c.Threads, len(c.Rounds))
	fmt.Fprintf(out, "CPU %s, %d logical CPUs, GEMM kernel %s\n\n", c.CPU, c.Cores, c.Kernel)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tPyTorch non-private\ttorch.func DP\thooks DP\tdptune non-private\tdptune DP-SGD\tDP ÷ torch.func\tDP ÷ PyTorch non-private\tof FMA peak\tload (PyTorch; dptune)\t")
	for i, r := range c.Rounds {
		fmt.Fprintf(tw, "%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.2f×\t%.2f×\t%.0f%%\t%s→%s; %s→%s\t\n", i+1,
			r.PyTorch.NonPrivate, r.PyTorch.Func, r.PyTorch.Hooks, r.NonPrivate, r.DP, r.DP/r.PyTorch.Func, r.DP/r.PyTorch.NonPrivate,
			100*r.PeakFraction, load1(r.PyTorch.LoadAvg[0]), load1(r.PyTorch.LoadAvg[1]), load1(r.LoadAvg[0]), load1(r.LoadAvg[1]))
	}
	span := func(r bench.Range, scale float64, format string) string {
		lo, hi := fmt.Sprintf(format, scale*r.Min), fmt.Sprintf(format, scale*r.Max)
		if lo == hi {
			return lo
		}
		return lo + "–" + hi
	}
	fmt.Fprintf(tw, "range\t%s\t%s\t%s\t%s\t%s\t%s×\t%s×\t%s%%\t\t\n",
		span(c.PyTorchNonPrivate, 1, "%.0f"), span(c.PyTorchFunc, 1, "%.0f"), span(c.PyTorchHooks, 1, "%.0f"),
		span(c.NonPrivate, 1, "%.0f"), span(c.DP, 1, "%.0f"), span(c.DPOverFunc, 1, "%.2f"),
		span(c.DPOverPyTorchNonPrivate, 1, "%.2f"), span(c.PeakFraction, 100, "%.0f"))
	tw.Flush()
	fmt.Fprintln(out, "\nexamples per second; each ratio is one round's dptune DP-SGD over the same round's PyTorch figure; load: 1-minute load average before → after each side")
}

// load1 is the 1-minute figure of a bench.LoadAvg.
func load1(loadavg string) string {
	if f := strings.Fields(loadavg); len(f) > 0 {
		return f[0]
	}
	return "?"
}

func newBenchAuditCmd() *cobra.Command {
	var c bench.AuditFigureConfig
	var oneRun bool
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Xiang et al.'s Figure 6 and Table 3, the tight DP-SGD audit, every tuner's audit and a one-run audit of make run, at 2-core scale",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.CheckRequest(cmd.Context()); err != nil {
				return err
			}
			if oneRun {
				src, err := job.Dataset("mnist", "")
				if err != nil {
					return err
				}
				src.Features = job.FeatureCache{Dir: job.DefaultFeatureCache()}
				if c.OneRun, err = bench.MakeRunOneRun(src, c.Seed); err != nil {
					return err
				}
			}
			w := cmd.ErrOrStderr()
			start := time.Now()
			c.Progress = func(s string) { fmt.Fprintf(w, "%s (%.0f s)\n", s, time.Since(start).Seconds()) }
			panels, tables, err := bench.AuditFigures(cmd.Context(), c)
			out := cmd.OutOrStdout()
			for _, p := range panels {
				fmt.Fprintf(out, "\nτ = %g, K ~ %s\n  ε_B    ε_U-P   ε_U-G   ε_U-O   ε_L\n", p.Tau, p.Repetitions)
				for _, a := range p.Points {
					fmt.Fprintf(out, "  %-5g  %6.3f  %6.3f  %6.3f  %6.3f\n", a.BaseEpsilon, a.UpperP, a.UpperG, a.UpperO, a.Lower)
				}
			}
			if tables != nil {
				fmt.Fprintf(out, "\nDP-SGD, Dirac canary, τ = 1, %d steps, all iterates, %d trials\n  ε(rdp)  pld     ε_L     GDP est.  seconds\n", c.DPSGDSteps, c.DPSGDTrials)
				for _, r := range tables.TightDPSGD {
					fmt.Fprintf(out, "  %-6.3f  %6.3f  %6.3f  %6.3f  %6.1f\n", r.Epsilon, r.EpsilonPLD, r.Lower, r.GDPEstimate, r.Seconds)
				}
				fmt.Fprintf(out, "\nXiang et al.'s Table 3, ETCV (reduced game, K ~ TNB(0, 0.01), %d trials)\n  ε_B   published  ε_L     ε_U-O   seconds\n", c.Trials)
				for _, r := range tables.Table3 {
					fmt.Fprintf(out, "  %-4g  %9.2f  %6.3f  %6.3f  %6.1f\n", r.BaseEpsilon, r.Published, r.Lower, r.UpperO, r.Seconds)
				}
				fmt.Fprintln(out, "\nTuners in the worst case")
				for _, r := range tables.Tuners {
					fmt.Fprintf(out, "  %-52s %-10s ε_L %6.3f  %v  %.0f s\n", r.Tuner, r.Setting, r.Lower, r.Upper, r.Seconds)
				}
				if o := tables.OneRun; o != nil {
					fmt.Fprintf(out, "\nOne-run audit: %s: ε_L %.3f against ε %.3f (%.0f s)\n", o.Command, o.Lower, o.Epsilon, o.Seconds)
				}
			}
			fmt.Fprintf(w, "wall time %.1f s; figures and audit-figures.json in %s\n", time.Since(start).Seconds(), c.Out)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&c.Out, "out", "out/bench-audit", "directory for the figures and JSON")
	fl.IntVar(&c.Trials, "trials", 1000000, "trials of each reduced-game audit (the paper's 10⁶)")
	fl.IntVar(&c.DPSGDTrials, "dpsgd-trials", 100000, "trials of each DP-SGD audit (the worst-case game, all iterates)")
	fl.IntVar(&c.DPSGDSteps, "dpsgd-steps", 50, "steps of each audited DP-SGD run")
	fl.Float64SliceVar(&c.BaseEpsilons, "base-epsilons", []float64{0.5, 1, 2, 4}, "ε_B of one run")
	fl.Uint64Var(&c.Seed, "seed", 1, "seed of the audits")
	fl.BoolVar(&oneRun, "one-run", true, "also audit make run's training in one run (reads MNIST; its features are cached as train caches them)")
	return cmd
}

// commandLine is this invocation as typed, for the outputs that record how
// they were made (compare.json, tuners.json).
func commandLine() string { return "dptune " + strings.Join(os.Args[1:], " ") }
