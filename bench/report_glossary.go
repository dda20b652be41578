package bench

import (
	"fmt"
	"io"
)

// glossaryTitle is the heading of the report's glossary.
const glossaryTitle = "Glossary"

// glossary is the report's glossary: each term as the report uses it and
// its definition, as its paper gives it (cited).
var glossary = [][2]string{
	{BaselineDefault, "What a user does instead of tuning: one private DP-SGD run of the network's published settings (for the ScatterNet networks, Tramèr & Boneh's) at the whole (ε, δ) on the whole training set. It needs no validation split; each comparison gives its settings and their source."},
	{BaselineSelection + " (not private)", "Every candidate trained privately at the whole ε on the tuners' training split, and the best on the clean (un-noised) validation split released with one run's ε, as most papers report: the selection and the other runs are not counted."},
	{BaselineOracle + " (not private)", "The best test accuracy among those same runs: a ceiling no tuner can claim, since it selects on the test set."},
	{"paired difference", "A tuner's test accuracy less the default's (or another tuner's), per seed — both use the seed's split — then the mean over seeds with its 95% Student-t interval."},
	{VerdictPays + " / " + VerdictCosts + " / " + VerdictUnresolved, "The verdict of a private tuner against the default at one dataset and ε, from the paired difference's 95% interval: wholly above 0, wholly below 0, or holding 0. With one seed there is no interval (\"" + VerdictOneSeed + "\")."},
	{"reproduced / partly reproduced / not reproduced / not comparable / not run", "The verdict on a paper's result. For a claim that one tuner beats another at one total budget: *reproduced* when ours is ahead beyond the 95% intervals at more than half the budgets and behind at none; *partly reproduced* when ahead beyond them at some budgets and within them at the others; *not reproduced* when behind beyond them at any budget, or within them at every one. *Not comparable*: our run does not measure the same quantity at comparable settings (or has one seed, no interval), and the verdict says why. *Not run*: no input of this report judges the result. A section whose result is not such a claim states its own rule beside its verdict."},
	{"TNB", "The truncated negative binomial distribution NegBin(η, γ), η > −1, γ ∈ (0, 1), of the number K of training runs in random-stop tuning (Papernot & Steinke 2022; DP-HyPO's Appendix B, Definition B.1): P[K = k] = (1 − γ)^k / (γ^(−η) − 1) · ∏_{ℓ=0}^{k−1} (ℓ + η)/(ℓ + 1) for k ≥ 1, with E[K] = η(1 − γ) / (γ(1 − γ^η)); η = 1 is the geometric distribution and η = 0 the logarithmic one. Random-stop trains K candidates drawn at random and releases the best; its ε is a small multiple of one run's plus a term in log E[K] (their Theorem 2), not the composition of K runs. *Poisson* is the same with K ~ Poisson(μ) (Papernot & Steinke's Theorem 6)."},
	{"ETCV", "Xiang et al.'s \"empty training and controlled validation\" audit setting (their Table 2 and Section 4; its heading reads \"empty training and controlled dataset\"), beside NTNV (normal training, normal validation) and NTCV (normal training, controlled validation): the training set is empty (X = ∅ against X′ = {z}, the worst-case dataset), so a batch holds at most the differing example z, and the adversary controls the score that selects among the runs (z's loss, or the first coordinate of w₀ − w_N for the Dirac-gradient canary z = Z_D)."},
	{"ε_B, ε_L", "In Xiang et al.'s audits: ε_B is the privacy budget of the base algorithm (one DP-SGD run); ε_L the audited lower bound on the tuning's ε, from the distinguishing game's success with a Clopper–Pearson interval."},
	{"ε_U-P", "The previous, generic upper bound on random-stop tuning's ε (Papernot & Steinke), from the base run's RDP: Xiang et al.'s Figure 6 label for it."},
	{"ε_U-G", "Xiang et al.'s upper bound for DP-SGD as the base algorithm (Section 5, Algorithm 3): the DP-SGD run reduced to telling N(0, 1) from N(μ, 1), μ from Gaussian differential privacy (Dong et al.), then the RDP of the best of K such draws, converted to (ε, δ)."},
	{"ε_U-O", "The same bound with μ from Xiang et al.'s own reduction of DP-SGD (Section 5.1, eq. 19) instead of GDP's, slightly below ε_U-G in their results (Figure 6, Table 4). It is an upper bound, not an exact ε: an audit's ε_L may fall short of it, and a sound ε_L never exceeds it."},
	{"kϵ", "In Ding et al.'s doubling tuner (Algorithm 1): the number k of disjoint training parts, each candidate's utility averaged over one model per part, times ϵ, the privacy parameter of one search iteration. A utility in [0, 1] averaged over k parts changes by at most 1/k with one example, and the search adds Lap(2/(kϵ)) to its threshold and Lap(4/(kϵ)) to each candidate's utility, so kϵ alone sets how noisy the search is; Ding et al. find it picks good candidates from kϵ ≈ 5 (Figure 3: choose k ≥ 5/ϵ)."},
	{"RandGuess", "DP-Hype's lower reference: the mean test accuracy over all candidates, what choosing one at random gets in expectation, at no privacy cost since it ignores the data."},
	{"Opt", "DP-Hype's non-private upper reference: the test accuracy of the best candidate, every candidate trained by federated learning (FedAvg) and the best one taken."},
}

// writeGlossary writes the glossary section.
func writeGlossary(w io.Writer) {
	fmt.Fprintf(w, "## %s\n\n", glossaryTitle)
	for _, g := range glossary {
		fmt.Fprintf(w, "- **%s** — %s\n", g[0], g[1])
	}
	fmt.Fprintln(w)
}
