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
into --feature-cache (as train does), not in each step.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchPerSample(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataset, "dataset", "mnist", job.DatasetHelp())
	fl.StringVar(&f.dataDir, "data-dir", "", "directory with the dataset's files (default "+job.DefaultDirHelp()+")")
	addModelFlag(fl, &f.model)
	fl.StringVar(&f.featureCache, "feature-cache", job.DefaultFeatureCache(), "curator directory keeping the features of a network with a scatter front end, computed once per dataset (they are the private data, transformed: created 0700, files 0600); empty: compute them on every run")
	fl.IntSliceVar(&f.BatchSizes, "batch-size", []int{256}, "expected batch sizes, e.g. 64,128,256,512")
	fl.IntVar(&f.Steps, "steps", 50, "measured steps per batch size and mode")
	fl.IntVar(&f.Warmup, "warmup", 5, "unmeasured steps before them")
	fl.StringVar(&f.JSON, "json", "", "also write the figures to this JSON file")
	fl.StringVar(&f.Plot, "plot", "", "also draw them to this PNG file")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the initialisation, sampling and noise")
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
	w := cmd.ErrOrStderr()
	src.Features = job.FeatureCache{Dir: f.featureCache, Progress: featureProgress(w)}
	train, _, err := src.LoadInputs(cmd.Context(), nil)
	if err != nil {
		return err
	}
	rep, err := bench.PerSample(cmd.Context(), bench.PerSampleConfig{
		Train: train, Arch: src.Arch, BatchSizes: f.BatchSizes, Steps: f.Steps, Warmup: f.Warmup, Seed: f.seed,
		Progress: func(b int, mode string) {
			fmt.Fprintf(w, "batch %d, %s: %d + %d steps\n", b, mode, f.Warmup, f.Steps)
		},
	})
	if len(rep.Results) > 0 {
		printPerSample(cmd.OutOrStdout(), rep)
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
