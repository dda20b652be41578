package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/bench"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/runner"
)

type benchTunersFlags struct {
	dataset, dataDir, space, cache, out  string
	model, featureCache                  string
	run                                  runnerFlags
	epsilon, delta, refGamma, scoreNoise float64
	gammas                               []float64
	lrStride, clipStride, epochs, seeds  int
	batchSize, repeats                   int
	seed                                 uint64
}

func newBenchTunersCmd() *cobra.Command {
	var f benchTunersFlags
	cmd := &cobra.Command{
		Use:   "tuners",
		Short: "DP-HyPO's semi-real simulation: GP vs uniform tuning on landscapes of real DP-SGD runs (Table 1)",
		Long: `tuners reproduces DP-HyPO's MNIST simulation (Wang et al. 2023, Section 4.2.1,
Appendix E.1, Table 1) on real data. It first builds two landscapes — the test
accuracy of real DP-SGD runs at each point of a subgrid of the search space,
one at the GP tuner's noise multiplier and one at the uniform tuner's, both
calibrated for the same total ε with geometric runs of mean 1/--ref-gamma —
cached in a CSV file that later runs reuse. Then, for each geometric γ, it
runs both tuners --repeats times on the landscapes (each visit scores the
landscape mean plus N(0, --score-noise²)) and prints the mean accuracy of the
selected candidate, as the paper's Table 1, with a plot.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchTuners(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataset, "dataset", "mnist", "mnist or cifar10")
	addRunnerFlags(fl, &f.run)
	fl.StringVar(&f.dataDir, "data-dir", "", "directory of the dataset's files (default for mnist: the GoMNIST module)")
	addModelFlag(fl, &f.model)
	fl.StringVar(&f.featureCache, "feature-cache", job.DefaultFeatureCache(), "curator directory keeping the features of a network with a scatter front end, computed once per dataset (created 0700, files 0600); empty: compute them on every run")
	fl.StringVar(&f.space, "space", "", "search space (default: the dataset's DP-HyPO grid)")
	fl.IntVar(&f.lrStride, "lr-stride", 2, "keep every n-th learning rate of the space")
	fl.IntVar(&f.clipStride, "clip-stride", 4, "keep every n-th clipping norm of the space")
	fl.IntVar(&f.epochs, "epochs", 1, "epochs of each landscape run")
	fl.IntVar(&f.seeds, "seeds", 2, "landscape runs per grid point")
	fl.IntVar(&f.batchSize, "batch-size", 256, "expected batch size")
	fl.Float64Var(&f.epsilon, "epsilon", 15, "total ε in nats of each tuning (the paper's MNIST simulation: 15)")
	fl.Float64Var(&f.delta, "delta", 1e-5, "δ")
	fl.Float64Var(&f.refGamma, "ref-gamma", 0.01, "geometric γ at which each method's noise multiplier is calibrated")
	fl.Float64SliceVar(&f.gammas, "gammas", []float64{0.002, 0.003, 0.005, 0.01, 0.02, 0.025, 0.03}, "geometric γ of the number of runs (DP-HyPO's Table 1 but γ = 0.001, whose E[K] = 1000 is above the 700 runs dptune draws)")
	fl.IntVar(&f.repeats, "repeats", 200, "tunings per cell")
	fl.Float64Var(&f.scoreNoise, "score-noise", 0.1, "standard deviation of each visit's score around the landscape mean")
	fl.StringVar(&f.cache, "cache", "", "landscape CSV cache (default: DIR/landscape-DATASET.csv)")
	fl.StringVar(&f.out, "out", "out/bench-tuners", "directory for the table (CSV, JSON) and plot (PNG)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the simulation")
	return cmd
}

func runBenchTuners(cmd *cobra.Command, f benchTunersFlags) error {
	src, err := job.Dataset(f.dataset, f.dataDir)
	if err == nil {
		src, err = withModel(src, f.model)
	}
	if err != nil {
		return err
	}
	if err := f.check(src.NominalN); err != nil {
		return err
	}
	full, err := loadSpace(f.space, f.dataset)
	if err != nil {
		return usageError{err}
	}
	space := bench.Subgrid(full, map[string]int{job.LearningRate: f.lrStride, job.ClipNorm: f.clipStride})
	// Each method's noise, for the same total budget at the reference γ.
	q := float64(f.batchSize) / float64(src.NominalN)
	if err := job.CheckEpochs(f.epochs, q); err != nil {
		return usagef("--epochs %d: %v", f.epochs, err)
	}
	gpOpt := job.DefaultGPOptions()
	sigmaGP, sigmaU, err := bench.SimulationNoise(cmd.Context(), q, job.StepsForEpochs(f.epochs, q), f.refGamma, gpOpt, f.epsilon, f.delta)
	if err != nil {
		return usageError{err}
	}
	if err := job.CheckOut(f.out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if f.cache == "" {
		f.cache = filepath.Join(f.out, "landscape-"+f.dataset+".csv")
	}
	if err := f.run.check(cmd); err != nil {
		return err
	}
	run, end, err := f.run.open(cmd.Context(), cmd, "bench tuners", f.out)
	if err != nil {
		return err
	}
	if run == nil {
		run = runner.Local{} // one run per core, each engine on its share
	}
	src = src.ForRunner(run) // workers check their copy of the data
	w := cmd.ErrOrStderr()
	start, load := time.Now(), bench.LoadAvg()
	src.Features = job.FeatureCache{Dir: f.featureCache, Progress: featureProgress(w)}
	train, test, err := src.LoadInputs(cmd.Context(), nil) // the sets the network reads, as LandscapeJobs expects
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "landscapes of %s: %d candidates × %d seeds × %d epoch(s) at batch %d, σ = %.4f (GP) and %.4f (uniform), cache %s\n",
		src.Arch.Name, space.Size(), f.seeds, f.epochs, f.batchSize, sigmaGP, sigmaU, f.cache)
	ctx := cmd.Context()
	ls, err := buildLandscapes(ctx, w, bench.LandscapeConfig{Arch: src.Arch, Train: train, Test: test, Space: space,
		SamplingRate: q, Epochs: f.epochs, Seeds: f.seeds, Cache: f.cache,
		Runner: run, Jobs: job.LandscapeJobsFor(src, train, test)}, sigmaGP, sigmaU)
	if err != nil {
		return errors.Join(err, end(errors.Is(err, context.Canceled)))
	}
	if err := end(false); err != nil {
		return err
	}
	cells, err := bench.SimulateTuners(ctx, bench.TunerSimConfig{GP: ls[0], Uniform: ls[1], Gammas: f.gammas, Repeats: f.repeats,
		ScoreNoise: f.scoreNoise, GPOptions: gpOpt, Seed: f.seed,
		Progress: progressTo(w, "simulation tunings")})
	if err != nil {
		return err
	}
	printTunerTable(cmd.OutOrStdout(), cells, ls, f)
	m := tunerMachine{Network: src.Arch.Name, CPUs: runtime.NumCPU(), Load: []string{load, bench.LoadAvg()},
		Wall: time.Since(start).Seconds(), Finished: time.Now().UTC().Format(time.RFC3339)}
	if err := writeTunerTable(f.out, cells, ls, f, sigmaGP, sigmaU, m); err != nil {
		return err
	}
	return bench.PlotTuners(cells, filepath.Join(f.out, "tuners.png"))
}

// check refuses flags the simulation cannot run, before any landscape is
// built: strides, counts and a batch size (of nominal training-set size
// n) out of range, a bad score noise, and geometric γs, ε or δ that the
// tunings cannot take.
func (f benchTunersFlags) check(n int) error {
	switch {
	case f.lrStride < 1 || f.clipStride < 1:
		return usagef("--lr-stride and --clip-stride must be at least 1")
	case f.epochs < 1 || f.seeds < 1 || f.repeats < 1:
		return usagef("--epochs, --seeds and --repeats must be at least 1")
	case f.batchSize < 1 || f.batchSize > n:
		return usagef("--batch-size %d is outside [1, %d]", f.batchSize, n)
	case !(f.scoreNoise >= 0) || math.IsInf(f.scoreNoise, 1):
		return usagef("--score-noise %v must be a finite non-negative number", f.scoreNoise)
	case len(f.gammas) == 0:
		return usagef("--gammas needs at least one γ")
	}
	for _, g := range append([]float64{f.refGamma}, f.gammas...) {
		if !(g > 0 && g < 1) {
			return usagef("γ = %v is outside (0, 1)", g)
		}
		// Checked here, before the landscapes are built: each tuning
		// draws K from TNB(1, γ).
		if err := job.TNBRepetitions(1, g).CheckSampled(); err != nil {
			return usagef("γ = %v: %v", g, err)
		}
	}
	if err := job.CheckEpsilon(f.epsilon); err != nil {
		return usagef("--epsilon: %v", err)
	}
	if err := job.CheckDelta(f.delta); err != nil {
		return usagef("--delta: %v", err)
	}
	return nil
}

// buildLandscapes builds the GP tuner's landscape at σ = sigmaGP and the
// uniform tuner's at sigmaU, each as base says, with its runs' progress on
// w.
func buildLandscapes(ctx context.Context, w io.Writer, base bench.LandscapeConfig, sigmaGP, sigmaU float64) ([2]bench.Landscape, error) {
	var ls [2]bench.Landscape
	for k, sigma := range []float64{sigmaGP, sigmaU} {
		label := []string{"GP landscape", "uniform landscape"}[k]
		c := base
		c.NoiseMultiplier, c.Progress = sigma, progressTo(w, label+" runs")
		var err error
		if ls[k], err = bench.BuildLandscape(ctx, c); err != nil {
			return ls, err
		}
	}
	return ls, nil
}

func best(l bench.Landscape) float64 {
	b := math.Inf(-1)
	for _, m := range l.Mean {
		b = math.Max(b, m)
	}
	return b
}

func printTunerTable(out io.Writer, cells []bench.TunerSimCell, ls [2]bench.Landscape, f benchTunersFlags) {
	fmt.Fprintf(out, "DP-HyPO Table 1 on real landscapes (%s, %s, %d candidates, ε = %g, %d tunings per cell; best landscape mean: GP %.3f, uniform %.3f; landscape runs: %.1f h of wall time)\n\n",
		f.dataset, ls[0].Network, ls[0].Space.Size(), f.epsilon, f.repeats, best(ls[0]), best(ls[1]), (ls[0].Seconds+ls[1].Seconds)/3600)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, v func(bench.TunerSimCell) string) {
		fmt.Fprint(tw, name)
		for _, c := range cells {
			fmt.Fprint(tw, "\t"+v(c))
		}
		fmt.Fprintln(tw, "\t")
	}
	row("Geometric(γ)", func(c bench.TunerSimCell) string { return strconv.FormatFloat(c.Gamma, 'g', -1, 64) })
	row("GP", func(c bench.TunerSimCell) string { return fmt.Sprintf("%.3f", c.GPAccuracy) })
	row("Uniform", func(c bench.TunerSimCell) string { return fmt.Sprintf("%.3f", c.UniformAccuracy) })
	row("GP − Uniform (paired)", func(c bench.TunerSimCell) string { d, _ := c.GapAndStdErr(); return fmt.Sprintf("%+.3f", d) })
	row("± (2 s.e.)", func(c bench.TunerSimCell) string { _, se := c.GapAndStdErr(); return fmt.Sprintf("%.3f", 2*se) })
	tw.Flush()
}

// tunerMachine is what tuners.json says about the network and the machine
// the benchmark ran on.
type tunerMachine struct {
	Network  string
	CPUs     int
	Load     []string // load average before and after
	Wall     float64  // seconds of this invocation
	Finished string
}

func writeTunerTable(dir string, cells []bench.TunerSimCell, ls [2]bench.Landscape, f benchTunersFlags, sigmaGP, sigmaU float64, m tunerMachine) error {
	var b strings.Builder
	cw := csv.NewWriter(&b)
	cw.Write([]string{"gamma", "mean_runs", "gp_accuracy", "gp_stderr", "uniform_accuracy", "uniform_stderr", "gp_minus_uniform", "gp_minus_uniform_stderr"})
	for _, c := range cells {
		cw.Write([]string{strconv.FormatFloat(c.Gamma, 'g', -1, 64), strconv.FormatFloat(c.MeanRuns, 'g', 6, 64),
			strconv.FormatFloat(c.GPAccuracy, 'f', 5, 64), strconv.FormatFloat(c.GPStdErr, 'f', 5, 64),
			strconv.FormatFloat(c.UniformAccuracy, 'f', 5, 64), strconv.FormatFloat(c.UniformStdErr, 'f', 5, 64),
			strconv.FormatFloat(c.Difference, 'f', 5, 64), strconv.FormatFloat(c.DifferenceStdErr, 'f', 5, 64)})
	}
	cw.Flush()
	if err := os.WriteFile(filepath.Join(dir, "tuners.csv"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(map[string]any{"dataset": f.dataset, "epsilon": f.epsilon, "delta": f.delta,
		"gp_noise_multiplier": sigmaGP, "uniform_noise_multiplier": sigmaU, "candidates": ls[0].Space.Size(),
		"landscape_epochs": f.epochs, "landscape_seeds": f.seeds, "repeats": f.repeats, "score_noise": f.scoreNoise,
		"command": commandLine(),
		"network": m.Network, "batch_size": f.batchSize, "landscape_seconds": ls[0].Seconds + ls[1].Seconds,
		"cpus": m.CPUs, "load_avg": m.Load, "wall_seconds": m.Wall, "finished": m.Finished,
		"cells": cells}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tuners.json"), append(js, '\n'), 0o644)
}
