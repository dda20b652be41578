package main

import (
	"math"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/job"
)

// repeatFlags are the flags of the distribution of the number of runs K of
// random-stop tuning, shared by account and audit.
type repeatFlags struct {
	dist                 string
	eta, gamma, meanRuns float64
	binaryL, runs        int
	binaryS              float64
}

func (r *repeatFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&r.dist, "repeat", "", "random-stop tuning: distribution of the number of runs K: tnb, poisson, binary (K = 1 w.p. s, else L) or fixed")
	fl.Float64Var(&r.eta, "eta", 1, "TNB shape η > −1 (1: geometric, 0: logarithmic)")
	fl.Float64Var(&r.gamma, "gamma", 0, "TNB parameter γ in (0, 1) (instead of --mean-runs)")
	fl.Float64Var(&r.meanRuns, "mean-runs", 0, "expected number of runs E[K] (TNB: > 1; Poisson: μ ≥ 1)")
	fl.IntVar(&r.binaryL, "binary-l", 0, "binary: the large number of runs L")
	fl.Float64Var(&r.binaryS, "binary-s", 0, "binary: the probability s of a single run")
	fl.IntVar(&r.runs, "runs", 0, "fixed: the number of runs K")
}

// parse returns the distribution the flags name, nil when --repeat is not
// given (refusing its options then), or a usage error.
func (r *repeatFlags) parse(cmd *cobra.Command) (*job.Repetitions, error) {
	ch := cmd.Flags().Changed
	own := map[string][]string{job.RepeatTNB: {"eta", "gamma", "mean-runs"}, job.RepeatPoisson: {"mean-runs"},
		job.RepeatBinary: {"binary-l", "binary-s"}, job.RepeatFixed: {"runs"}}
	allowed := map[string]bool{}
	for _, n := range own[r.dist] {
		allowed[n] = true
	}
	for _, n := range []string{"eta", "gamma", "mean-runs", "binary-l", "binary-s", "runs"} {
		if ch(n) && !allowed[n] {
			if r.dist == "" {
				return nil, usagef("--%s needs --repeat", n)
			}
			return nil, usagef("--%s is not an option of --repeat %s", n, r.dist)
		}
	}
	var rep job.Repetitions
	switch r.dist {
	case "":
		return nil, nil
	case job.RepeatTNB:
		if !(r.eta > -1) || math.IsInf(r.eta, 1) {
			return nil, usagef("--eta %v must be greater than −1", r.eta)
		}
		switch {
		case ch("gamma") && ch("mean-runs"):
			return nil, usagef("give --gamma or --mean-runs, not both")
		case ch("gamma"):
			if !(r.gamma > 0 && r.gamma < 1) {
				return nil, usagef("--gamma %v is outside (0, 1)", r.gamma)
			}
			rep = job.TNBRepetitions(r.eta, r.gamma)
		case ch("mean-runs"):
			var err error
			if rep, err = tnbWithMean(r.eta, r.meanRuns); err != nil {
				return nil, err
			}
		default:
			return nil, usagef("--repeat tnb needs --gamma or --mean-runs")
		}
	case job.RepeatPoisson:
		if !(r.meanRuns >= 1) || math.IsInf(r.meanRuns, 1) {
			return nil, usagef("--repeat poisson needs --mean-runs μ ≥ 1 (the bound is proved for those), have %v", r.meanRuns)
		}
		rep = job.PoissonRepetitions(r.meanRuns)
	case job.RepeatBinary:
		rep = job.BinaryRepetitions(r.binaryL, r.binaryS)
	case job.RepeatFixed:
		rep = job.FixedRepetitions(r.runs)
	default:
		return nil, usagef("unknown --repeat %q (want tnb, poisson, binary or fixed)", r.dist)
	}
	if err := rep.Check(); err != nil {
		return nil, usageError{err}
	}
	return &rep, nil
}

// tnbWithMean is job.TNBWithMean(eta, mean) with a usage error that
// names the flag at fault: --eta outside (−1, ∞), --mean-runs not finite
// or not above 1, or, with both in range, an --eta so large that no γ
// representable in float64 gives that mean.
func tnbWithMean(eta, mean float64) (job.Repetitions, error) {
	if !(eta > -1) || math.IsInf(eta, 1) {
		return job.Repetitions{}, usagef("--eta %v must be greater than −1", eta)
	}
	if !(mean > 1) || math.IsInf(mean, 1) {
		return job.Repetitions{}, usagef("--mean-runs %v: a TNB's mean must be finite and above 1", mean)
	}
	rep, err := job.TNBWithMean(eta, mean)
	if err != nil {
		return rep, usagef("--eta %v: no TNB of this shape has --mean-runs %v (%v)", eta, mean, err)
	}
	return rep, nil
}
