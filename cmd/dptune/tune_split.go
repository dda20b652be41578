package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/job"
)

// splitFlags are tune's flags for the default among the candidates and a
// selection share (job.TuneSpec.IncludeDefault, SelectionShare); the job
// checks their values.
type splitFlags struct {
	includeDefault                  bool
	defaultWeight, share, subsample float64
	defaultSettings, defaultSource  string
}

func addSplitFlags(fl *pflag.FlagSet, f *splitFlags) {
	fl.BoolVar(&f.includeDefault, "include-default", false, "put the default settings among the candidates: the network's published settings on the dataset (not those dptune chose on the dataset's own training data: refused), or --default-settings (grid, doubling and randomstop; grid and doubling score them as one more candidate, randomstop draws them at each run with probability --default-weight)")
	fl.Float64Var(&f.defaultWeight, "default-weight", 0.25, "randomstop with --include-default: the probability w ∈ (0, 1) that each run trains the default (else a uniform candidate of the space); other tuners take none")
	fl.StringVar(&f.defaultSettings, "default-settings", "", "with --include-default: the default's settings, e.g. batch_size=4096,epochs=40,learning_rate=8,momentum=0.9,clip_norm=0.1 (default: the network's published settings on the dataset)")
	fl.StringVar(&f.defaultSource, "default-source", "", "where --default-settings come from, for the report (required with it)")
	fl.Float64Var(&f.subsample, "subsample", 0, "with --selection-share: run the selection on a secret Poisson subsample of ratio q ∈ (0, 1] of the training set (Koskela & Kulkarni 2023), its validation split inside it; each candidate keeps its sampling rate and epochs, and the chosen settings train the final run on the whole set; the selection's ε is amplified by q as one mechanism (default: none)")
	fl.Float64Var(&f.share, "selection-share", 0, "a share s ∈ (0, 1) of ε for the selection: only the selected hyperparameters leave it, and one final run of them on the whole training set, calibrated alone to (1 − s)·ε, is the released model; the selection's noise is calibrated so that both compose to ε (grid, randomstop and gp; default: no final run)")
}

// apply puts the flags into spec.
func (f splitFlags) apply(cmd *cobra.Command, spec *job.TuneSpec) error {
	ch := cmd.Flags().Changed
	if !f.includeDefault {
		for _, n := range []string{"default-weight", "default-settings", "default-source"} {
			if ch(n) {
				return usagef("--%s needs --include-default", n)
			}
		}
	}
	spec.IncludeDefault = f.includeDefault
	if ch("default-weight") {
		// Checked here, where a given 0 is told from none (the job's 0
		// is random-stop's prior weight tuning.DefaultWeight).
		if err := checkDefaultWeight(spec.Tuner, f.defaultWeight); err != nil {
			return err
		}
		spec.DefaultWeight = f.defaultWeight
	}
	d, err := job.ParseTrainDefaults(f.defaultSettings, f.defaultSource)
	if err != nil {
		return err
	}
	spec.Default = d
	if ch("selection-share") {
		if f.share == 0 {
			// 0 is the job's "no selection share".
			return usagef("--selection-share 0 is outside (0, 1)")
		}
		spec.SelectionShare = f.share
	}
	if ch("subsample") {
		if f.subsample == 0 {
			// 0 is the job's "no subsample".
			return usagef("--subsample 0 is outside (0, 1]")
		}
		spec.Subsample = f.subsample
	}
	return nil
}

// checkDefaultWeight refuses a given --default-weight w for a tuner that
// draws no runs (grid and doubling train or score the default once, as one
// more candidate; a tuner that takes no default is refused by the job) and
// a w outside (0, 1): at 0 no run would train the
// default, at 1 every run would, and none a candidate of the space.
func checkDefaultWeight(tuner string, w float64) error {
	if t, ok := tunerInfo(tuner); ok && t.Uses.Default && !t.Uses.Repetitions {
		return usagef("--default-weight is not a --tuner %s option: it draws no runs, so the default takes no weight (it is one more candidate, trained once)", tuner)
	}
	if !(w > 0 && w < 1) {
		return usagef("--default-weight %v is outside (0, 1): it is the probability that each run trains the default (0: never, 1: every run, and no candidate of the space)", w)
	}
	return nil
}

// notFor refuses the flags for a tuner that takes none of them (the vote,
// whose clients hold the data).
func (f splitFlags) notFor(cmd *cobra.Command, tuner string) error {
	for _, n := range []string{"include-default", "default-weight", "default-settings", "default-source", "selection-share", "subsample"} {
		if cmd.Flags().Changed(n) {
			return usagef("--%s is not a --tuner %s option", n, tuner)
		}
	}
	return nil
}

// printComponents prints a tuning's ε components, when it has more than
// one.
func printComponents(w io.Writer, cs []job.EpsilonComponent) {
	if len(cs) < 2 {
		return
	}
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s ε = %s", c.Name, fmtEpsilon(c.Epsilon)))
	}
	fmt.Fprintf(w, "               each alone at δ: %s (they compose, under RDP, to the total above)\n", strings.Join(parts, ", "))
}
