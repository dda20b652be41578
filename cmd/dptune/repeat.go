package main

import (
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/job"
)

// addRepeatFlags adds the flags of the distribution of the number of runs
// K of random-stop tuning (job.RepeatSettings), shared by account and
// audit.
func addRepeatFlags(fl *pflag.FlagSet, r *job.RepeatSettings) {
	fl.StringVar(&r.Dist, "repeat", "", "random-stop tuning: distribution of the number of runs K: tnb, poisson, binary (K = 1 w.p. s, else L) or fixed")
	fl.Float64Var(&r.Eta, "eta", 1, "TNB shape η > −1 (1: geometric, 0: logarithmic)")
	fl.Float64Var(&r.Gamma, "gamma", 0, "TNB parameter γ in (0, 1) (instead of --mean-runs)")
	fl.Float64Var(&r.MeanRuns, "mean-runs", 0, "expected number of runs E[K] (TNB: > 1; Poisson: μ ≥ 1)")
	fl.IntVar(&r.BinaryL, "binary-l", 0, "binary: the large number of runs L")
	fl.Float64Var(&r.BinaryS, "binary-s", 0, "binary: the probability s of a single run")
	fl.IntVar(&r.Runs, "runs", 0, "fixed: the number of runs K")
}
