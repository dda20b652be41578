// Package accounting is dptune's privacy spine: events that say what a
// mechanism did to the private data, accountants that turn events into
// (ε, δ) guarantees, noise calibration, and the ledger every result carries.
//
// The split follows Google's dp_accounting (DpEvent vs PrivacyAccountant):
// an Event is an immutable description ("a Poisson-subsampled Gaussian with
// noise multiplier 1.1 and sampling rate 0.004, composed 2,350 times"); an
// Accountant knows how to bound the privacy loss of the events it supports
// and returns an error naming any event it does not — it never skips one.
//
// ε is in nats throughout. Neighbouring datasets differ by adding or removing
// one example (the relation under which Poisson subsampling is analysed).
//
// Events: Gaussian, DiscreteGaussian, DistributedDiscreteGaussian (DP-Hype's
// securely summed vote), Laplace, EpsilonDelta, PoissonSampled, SelfComposed,
// Composed, RepeatAndSelect (random-stop tuning, K ∼ TNB or Poisson),
// AdaptiveRepeatAndSelect (DP-HyPO), Vote (DP-Hype), AboveThreshold (the
// doubling tuner's capped search) and NonPrivate.
//
// Accountants:
//
//   - RDP (Mironov 2017): orders 1.1 … 10.9, 12 … 63, 128, 256, 512
//     (DefaultOrders); the Poisson-subsampled Gaussian exact at integer and
//     fractional orders (Mironov, Talwar, Zhang 2019, §3.3 and §3.4);
//     Poisson subsampling of any other event it counts by Zhu & Wang 2019's
//     general upper bound (Theorem 6), as Koskela & Kulkarni 2023 use for
//     tuning on a subsample;
//     random-stop tuning by Papernot & Steinke 2022 (Theorems 2 and 6) and
//     DP-HyPO (Wang et al. 2023, Theorem 1); conversion to (ε, δ) by Balle
//     et al. 2020, Theorem 21 (also Canonne, Kamath, Steinke 2020), minimised
//     over the orders.
//   - PLD: privacy loss distributions discretised pessimistically by
//     connect-the-dots (Doroshenko et al. 2022) and composed by FFT (Koskela,
//     Jälkö, Honkela 2020): the tightest ε for DP-SGD, an upper bound; the
//     error terms are listed on PLD.
//   - GDP (Dong, Roth, Su 2022; Bu et al. 2020): μ-GDP with the central limit
//     theorem for subsampled steps; an approximation, labelled as such.
//   - Basic: pure DP and basic composition of (ε, δ).
//
// By name: each accountant's file registers it (Register, with a word of
// help, how reports describe it, and whether it is an approximation);
// ByName, Names, Help and Describe answer from that registry, so a
// command's --accountant values, its help text and its errors come from one
// place. The xiang-o and xiang-g names label the GaussianSelect
// approximation in reports: Describe knows them, ByName does not.
//
// What each counts:
//
//	event                      RDP   PLD   GDP       Basic
//	Gaussian, Vote             yes   yes   exact     –
//	DiscreteGaussian           yes   –     –         –
//	DistributedDiscreteGauss.  yes   –     –         –
//	Poisson-subsampled Gauss.  yes   yes   CLT ≈     –
//	Poisson-subsampled other   yes   –     –         (ε, δ) inner
//	Laplace                    yes   yes   –         yes
//	EpsilonDelta               δ=0   yes   –         yes
//	AboveThreshold             yes   yes   –         yes
//	RepeatAndSelect            yes   –     –         pure base, TNB
//	AdaptiveRepeatAndSelect    yes   –     –         pure base
//
// Limits, answered at once rather than computed for minutes: GaussianSelect
// (Xiang et al.'s Algorithm 3) is computed for shifts μ ≤
// MaxGaussianSelectMu and is +∞ (no meaningful privacy) above; the PLD accountant counts a Gaussian whose noise exceeds 10¹⁰⁰
// times its sensitivity as (0, δ₀)-DP with δ₀ its total variation (an upper
// bound: ε = 0 at any usable δ) and refuses losses that need a grid coarser
// than 1 nat; a distribution of the number of runs K that is drawn from
// (CheckSampled) has a mean of at most MaxMeanRuns; the general subsampling
// bound is evaluated at orders up to MaxSubsampledOrder (above it the
// inner event's RDP stands) and, for a GaussianSelect inside, on a sparse
// grid of inner orders above 64. RDP.EpsilonContext and
// EpsilonContext stop with ctx's error soon after ctx is cancelled.
//
// Calibration: CalibrateNoise (σ for a target ε, never above it; for a
// tuning pipeline pass its RepeatAndSelect event) and CalibrateSteps (the
// steps a budget allows).
package accounting
