package main

import (
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/job"
)

// addSplitFlags adds tune's flags of the default among the candidates and
// a selection share (job.TuneSpec.IncludeDefault, SelectionShare).
func addSplitFlags(fl *pflag.FlagSet, f *job.TuneRequest) {
	fl.BoolVar(&f.IncludeDefault, "include-default", false, "put the default settings among the candidates: the network's published settings on the dataset (not those dptune chose on the dataset's own training data: refused), or --default-settings (grid, doubling and randomstop; grid and doubling score them as one more candidate, randomstop draws them at each run with probability --default-weight)")
	fl.Float64Var(&f.DefaultWeight, "default-weight", 0.25, "randomstop with --include-default: the probability w ∈ (0, 1) that each run trains the default (else a uniform candidate of the space); other tuners take none")
	fl.StringVar(&f.DefaultSettings, "default-settings", "", "with --include-default: the default's settings, e.g. batch_size=4096,epochs=40,learning_rate=8,momentum=0.9,clip_norm=0.1 (default: the network's published settings on the dataset)")
	fl.StringVar(&f.DefaultSource, "default-source", "", "where --default-settings come from, for the report (required with it)")
	fl.Float64Var(&f.Subsample, "subsample", 0, "with --selection-share: run the selection on a secret Poisson subsample of ratio q ∈ (0, 1] of the training set (Koskela & Kulkarni 2023), its validation split inside it; each candidate keeps its sampling rate and epochs, and the chosen settings train the final run on the whole set; the selection's ε is amplified by q as one mechanism (default: none)")
	fl.Float64Var(&f.SelectionShare, "selection-share", 0, "a share s ∈ (0, 1) of ε for the selection: only the selected hyperparameters leave it, and one final run of them on the whole training set, calibrated alone to (1 − s)·ε, is the released model; the selection's noise is calibrated so that both compose to ε (grid, randomstop and gp; default: no final run)")
}
