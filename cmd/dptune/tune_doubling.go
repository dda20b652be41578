package main

import (
	"fmt"
	"io"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/tuning"
)

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
