package audit

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// MaxThresholds is the largest number of candidate thresholds EpsilonLower
// tries on the selection half: when the pooled first-half statistics have
// more distinct values, it tries −∞ and MaxThresholds − 1 of them at evenly
// spaced ranks, the smallest and largest included (Xiang et al., Appendix
// A.3, step 3, try thresholds spread over [λ_min, λ_max]; spreading them
// over ranks rather than values keeps them dense where the trials are).
const MaxThresholds = 2000

// LowerBound is the result of EpsilonLower: a lower bound on the ε of the
// audited protocol, in nats, holding with probability at least Confidence,
// and how it was reached.
type LowerBound struct {
	// EpsilonLower is ε_L in nats (≥ 0) by Xiang et al.'s eq. (4) at FPUpper
	// and FNUpper.
	EpsilonLower float64
	// Threshold is the adversary's threshold, chosen on the first half of
	// the trials: it guesses b = 1 when its statistic is > Threshold. It
	// may be −Inf (guess 1 unless the statistic is −Inf).
	Threshold float64
	// FP is the fraction of the second half's b = 0 trials whose statistic
	// is > Threshold; FN is the fraction of the second half's b = 1 trials
	// whose statistic is ≤ Threshold.
	FP, FN float64
	// FPUpper and FNUpper are the upper ends of the two-sided
	// Clopper–Pearson intervals at Confidence for FP and FN
	// (ClopperPearson).
	FPUpper, FNUpper float64
	// TrialsUsed is the number of trials ε_L was evaluated on: the second
	// halves of both kinds.
	TrialsUsed int
	// Confidence and Delta are the arguments of EpsilonLower.
	Confidence, Delta float64
}

// EpsilonLower concludes a lower bound ε_L, in nats, on the ε of an
// (ε, delta)-DP claim from the outcomes of the distinguishing game (Xiang et
// al., Algorithm 1 and Appendix A.3). stats0 holds the adversary's
// statistic on the trials whose coin was b = 0 (the protocol ran on X),
// stats1 on those with b = 1 (X′), each in trial order; ±Inf statistics are
// allowed (−Inf, for instance, when a tuner released nothing). The
// adversary guesses b = 1 when its statistic is > a threshold th.
//
// Each of stats0 and stats1 is split by index into a first half (the first
// ⌊n/2⌋ statistics) and a second half (the rest); the caller's order must
// not depend on the statistics (Run's trial order does not). On the first
// halves, every candidate threshold (−∞ and the distinct pooled first-half
// statistics, at most MaxThresholds in all) is scored by the bound below
// computed on the first halves, and the best, the lowest on ties, is kept.
// (Point estimates of FP and FN cannot be used to choose: a threshold above
// every b = 0 statistic has FP = 0 and an infinite eq. (4).) On the second
// halves, at that threshold alone, FP and FN are counted and
//
//	ε_L = max{log((1−δ−FP⁺)/FN⁺), log((1−δ−FN⁺)/FP⁺), 0}
//
// (Xiang et al., eq. (4); a term whose numerator is ≤ 0 counts as 0) with
// FP⁺, FN⁺ the upper ends of the two-sided Clopper–Pearson intervals at
// confidence, as Xiang et al. state their method (Section 2.2, "computed by
// Clopper-Pearson method ... with a 95% confidence"). Each upper end alone
// fails with probability at most (1−confidence)/2, so ε_L is a lower bound
// on the true ε with probability at least confidence (a union bound over
// the two ends; the threshold does not depend on the second half). The
// denominators are never 0: a Clopper–Pearson upper end is positive.
//
// It returns an error when stats0 or stats1 has fewer than 2 statistics, a
// statistic is NaN, delta is outside [0, 1) or confidence outside (0, 1).
func EpsilonLower(stats0, stats1 []float64, delta, confidence float64) (LowerBound, error) {
	if len(stats0) < 2 || len(stats1) < 2 {
		return LowerBound{}, fmt.Errorf("audit: need at least 2 trials of each kind to choose a threshold on one half and evaluate it on the other, have %d with b = 0 and %d with b = 1", len(stats0), len(stats1))
	}
	if !(delta >= 0 && delta < 1) {
		return LowerBound{}, fmt.Errorf("audit: δ must be in [0, 1), have %v", delta)
	}
	if !(confidence > 0 && confidence < 1) {
		return LowerBound{}, fmt.Errorf("audit: confidence must be in (0, 1), have %v", confidence)
	}
	for b, stats := range [][]float64{stats0, stats1} {
		for i, s := range stats {
			if math.IsNaN(s) {
				return LowerBound{}, fmt.Errorf("audit: statistic %d of the b = %d trials is NaN", i, b)
			}
		}
	}
	h0, h1 := len(stats0)/2, len(stats1)/2
	sel0 := slices.Clone(stats0[:h0])
	sel1 := slices.Clone(stats1[:h1])
	slices.Sort(sel0)
	slices.Sort(sel1)

	best, bestEps := math.Inf(-1), math.Inf(-1)
	for _, th := range candidates(sel0, sel1) {
		fp := h0 - countAtMost(sel0, th)
		fn := countAtMost(sel1, th)
		eps, _, _, err := eq4Upper(fp, h0, fn, h1, delta, confidence)
		if err != nil {
			return LowerBound{}, err
		}
		if eps > bestEps {
			best, bestEps = th, eps
		}
	}

	eval0, eval1 := stats0[h0:], stats1[h1:]
	fp, fn := 0, 0
	for _, s := range eval0 {
		if s > best {
			fp++
		}
	}
	for _, s := range eval1 {
		if s <= best {
			fn++
		}
	}
	eps, fpHi, fnHi, err := eq4Upper(fp, len(eval0), fn, len(eval1), delta, confidence)
	if err != nil {
		return LowerBound{}, err
	}
	return LowerBound{
		EpsilonLower: eps,
		Threshold:    best,
		FP:           float64(fp) / float64(len(eval0)),
		FN:           float64(fn) / float64(len(eval1)),
		FPUpper:      fpHi,
		FNUpper:      fnHi,
		TrialsUsed:   len(eval0) + len(eval1),
		Confidence:   confidence,
		Delta:        delta,
	}, nil
}

// candidates returns −∞ and the distinct values of the sorted a and b,
// increasing, thinned to MaxThresholds values in all by evenly spaced
// ranks (the smallest and largest kept).
func candidates(a, b []float64) []float64 {
	pooled := make([]float64, 0, len(a)+len(b)+1)
	pooled = append(pooled, math.Inf(-1))
	pooled = append(pooled, a...)
	pooled = append(pooled, b...)
	slices.Sort(pooled)
	pooled = slices.Compact(pooled)
	if len(pooled) <= MaxThresholds {
		return pooled
	}
	// pooled[0] is −∞; pick MaxThresholds − 1 of the m values after it.
	rest := pooled[1:]
	m, c := len(rest), MaxThresholds-1
	out := make([]float64, 0, MaxThresholds)
	out = append(out, pooled[0])
	for i := range c {
		out = append(out, rest[int(math.Round(float64(i)*float64(m-1)/float64(c-1)))])
	}
	return slices.Compact(out)
}

// countAtMost is the number of elements of the sorted s that are ≤ th.
func countAtMost(s []float64, th float64) int {
	return sort.Search(len(s), func(i int) bool { return s[i] > th })
}

// eq4Upper is Xiang et al.'s eq. (4) at the upper ends fpHi, fnHi of the
// two-sided Clopper–Pearson intervals at confidence for fp false positives
// in n0 trials and fn false negatives in n1 trials.
func eq4Upper(fp, n0, fn, n1 int, delta, confidence float64) (eps, fpHi, fnHi float64, err error) {
	if _, fpHi, err = ClopperPearson(fp, n0, confidence); err != nil {
		return 0, 0, 0, err
	}
	if _, fnHi, err = ClopperPearson(fn, n1, confidence); err != nil {
		return 0, 0, 0, err
	}
	if !(fpHi > 0 && fnHi > 0) {
		return 0, 0, 0, fmt.Errorf("audit: Clopper–Pearson upper ends %v (%d of %d) and %v (%d of %d) must be positive", fpHi, fp, n0, fnHi, fn, n1)
	}
	eps = 0
	if num := 1 - delta - fpHi; num > 0 {
		eps = max(eps, math.Log(num/fnHi))
	}
	if num := 1 - delta - fnHi; num > 0 {
		eps = max(eps, math.Log(num/fpHi))
	}
	return eps, fpHi, fnHi, nil
}
