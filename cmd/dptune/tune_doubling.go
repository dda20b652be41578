package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/tuning"
)

type doublingFlags struct {
	partitions, maxIterations, partEpochs int
	epsilon0, granularity, u0             float64
	private                               bool
	partitionNoise                        float64
	cache                                 string
}

var doublingFlagNames = []string{"partitions", "epsilon0", "granularity", "u0", "max-iterations", "private-partitions", "partition-noise", "part-epochs", "cache"}

func addDoublingFlags(fl *pflag.FlagSet, d *doublingFlags) {
	fl.IntVar(&d.partitions, "partitions", 10, "doubling: number k of disjoint training parts")
	fl.Float64Var(&d.epsilon0, "epsilon0", 0.1, "doubling: ϵ in nats of one search iteration")
	fl.Float64Var(&d.granularity, "granularity", 0.01, "doubling: utility granularity g")
	fl.Float64Var(&d.u0, "u0", 0, "doubling: utility lower bound u₀")
	fl.IntVar(&d.maxIterations, "max-iterations", 0, "doubling: iteration cap T_max (default ⌈5·log₂((1−u₀)/g)⌉)")
	fl.BoolVar(&d.private, "private-partitions", false, "doubling: train the parts with DP-SGD (default: clipped, without noise)")
	fl.Float64Var(&d.partitionNoise, "partition-noise", 1, "doubling: noise multiplier of private part runs")
	fl.IntVar(&d.partEpochs, "part-epochs", 3, "doubling: epochs of each part run")
	fl.StringVar(&d.cache, "cache", "", "doubling: file of finished part scores, reused on a rerun (default: OUT/partition-scores.csv)")
}

func printDoubling(w io.Writer, r *job.DoublingReport) {
	if r.Selected != nil {
		note := ""
		if r.Fallback {
			note = "  (no candidate passed the search: the first candidate, fixed in advance)"
		}
		fmt.Fprintf(w, "selected       learning rate %.4g, clipping norm %.4g%s\n", r.Selected[tuning.LearningRate], r.Selected[tuning.ClipNorm], note)
	} else {
		fmt.Fprintln(w, "released       nothing (interrupted or failed)")
	}
	if r.TestAccuracy != nil {
		fmt.Fprintf(w, "test accuracy  %.4f\n", *r.TestAccuracy)
	}
	final := fmt.Sprintf("final run %.4f", r.FinalEpsilon)
	if r.FinalSteps == 0 {
		final = "no final run"
	} else if r.Interrupted || r.Failed != "" {
		final = fmt.Sprintf("final run %.4f (%d steps done)", r.FinalEpsilon, r.FinalSteps)
	}
	fmt.Fprintf(w, "privacy        ε = %.4f, δ = %g spent (rdp): %s + search at most %d × %g = %.4f\n",
		r.Epsilon, r.Delta, final, r.MaxIterations, r.Epsilon0, r.TuningOverhead)
	fmt.Fprintf(w, "iterations     %d realised of the cap %d; the paper's w.h.p. figure ε + 3·log₂(n)·ϵ = %.4f (not a guarantee)\n",
		r.RealisedIterations, r.MaxIterations, r.PaperWHPEpsilon)
}
