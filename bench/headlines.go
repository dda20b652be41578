package bench

import "slices"

// headline is one seed paper's headline result as the report's lead table
// lists it: its paper and result, what was published, and, when none of the
// report's inputs judges it (no verdict of that paper), why not and what
// would — a measurement, not a guess.
type headline struct {
	Paper, Result, Published string
	// Missing is the verdict's reason when no input judges the paper.
	Missing string
}

// headlines are the seed papers' headline results, in the lead table's
// order. A verdict of a benchmark's section stands for its paper's row.
var headlines = []headline{
	{Paper: "Papernot & Steinke 2022", Result: "random-stop tuning beats grid search at one total budget",
		Published: "Theorem 2: ε of one run plus O(log E[K]) overhead",
		Missing:   "no `bench compare` output among the inputs: run `dptune bench compare` (see docs/guide/benchmarks.md)"},
	{Paper: "Wang et al. 2023 (DP-HyPO)", Result: "Table 1: GP ahead of Uniform on MNIST at ε = 15 (semi-real simulation)",
		Published: "GP − Uniform = +0.002 to +0.003 at every γ (320 candidates, 5 CNN runs of 10 epochs per point and method)",
		Missing: "not run at the paper's scale: its landscapes are 320 points × 5 runs × 2 noise multipliers = 3,200 CNN runs of 10 epochs " +
			"(opacus-mnist, batch 256: 2,344 steps of 14.7 ms each, ≈ 34 s per run on 2 AVX-512 cores: ≈ 30 hours); `dptune bench tuners` runs it at any scale"},
	{Paper: "Ding et al. (doubling)", Result: "constant tuning overhead: the search's ε independent of |S|; Figures 3–4",
		Published: "overhead ε + O(log((u* − u₀)/g))·ϵ; α ≈ 1 at kϵ ≥ 5; T ≈ 3·log₂ n",
		Missing:   "no `bench doubling` output among the inputs: `dptune bench doubling` takes seconds"},
	{Paper: "DP-Hype", Result: "Figure 2a: a good hyperparameter is chosen with high probability once ε ≥ 1",
		Published: "P(good) → 1 at ε ≥ 1 (ℓ ≤ 5, moderate non-IID)",
		Missing:   "no `bench vote` output among the inputs: run `dptune bench vote`"},
	{Paper: "Xiang et al. (Selection leaks privacy)", Result: "Table 3: tuning leaks more than one run (ETCV)",
		Published: "ε_L = 1.17 / 2.36 / 4.28 at ε_B = 1 / 2 / 4",
		Missing:   "no `bench audit` output among the inputs: run `dptune bench audit`"},
	{Paper: "Nasr et al. 2023 (tight auditing)", Result: "the worst-case white-box audit of DP-SGD is tight",
		Published: "ε_L close to ε_U",
		Missing:   "no `bench audit` output among the inputs: run `dptune bench audit`"},
}

// withHeadlines returns vs with a "not run" verdict for every headline
// whose paper no verdict of vs judges, in the headlines' order after vs.
func withHeadlines(vs []Verdict) []Verdict {
	out := slices.Clone(vs)
	for _, h := range headlines {
		if slices.ContainsFunc(vs, func(v Verdict) bool { return v.Paper == h.Paper }) {
			continue
		}
		out = append(out, Verdict{Paper: h.Paper, Result: h.Result, Published: h.Published, Ours: "—", Outcome: "not run", Why: h.Missing})
	}
	return out
}
