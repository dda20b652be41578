// Package audit runs the distinguishing game of Xiang, Wang, Wang, "How
// Does Selection Leak Privacy: Revisiting Private Selection and Improved
// Results for Hyper-parameter Tuning" (Algorithm 1, Game-based Privacy
// Audit), and concludes from it a lower bound ε_L, in nats, on the privacy
// loss of a protocol.
//
// An audit is the empirical counterpart of accounting. Accounting gives an
// upper bound ε_U: the protocol is at least as private as ε_U claims. An
// audit gives a lower bound ε_L, with a stated confidence: the protocol's
// true ε is at least ε_L, unless an event of probability at most 1 −
// confidence occurred. A correct accountant never reports ε_U < ε_L (beyond
// that probability); an accounting bug that under-reports ε — or an
// implementation that adds less noise than it claims — shows up as
// ε_L > ε_U.
//
// The procedure (Xiang et al., Section 2.2 and Appendix A.3):
//
//  1. Run (Algorithm 1), once per trial: the trainer flips a fair coin b,
//     runs the private protocol on X (b = 0) or on its neighbour X′ (b = 1),
//     and the adversary computes a real statistic λ from what was released.
//  2. The adversary guesses b = 1 when λ > th for a threshold th; its false
//     positive rate FP (guessing 1 when b = 0) and false negative rate FN
//     (guessing 0 when b = 1) are binomial proportions, bounded above by
//     Clopper–Pearson intervals (ClopperPearson).
//  3. By the hypothesis-testing characterisation of (ε, δ)-DP (Kairouz, Oh,
//     Viswanath 2015; Xiang et al., Theorem 1 and eq. (4)), any (ε, δ)-DP
//     protocol has FP + e^ε·FN ≥ 1 − δ and FN + e^ε·FP ≥ 1 − δ, so
//     ε_L = max{log((1−δ−FP)/FN), log((1−δ−FN)/FP), 0} at the upper ends
//     of FP and FN is a lower bound on ε (EpsilonLower).
//  4. The threshold is optimised (Appendix A.3, step 3).
//
// Choosing the threshold on the same trials it is then evaluated on
// overstates ε_L: the maximum over many thresholds of an estimate is biased
// upwards, and the Clopper–Pearson confidence no longer holds for the
// maximising threshold. EpsilonLower therefore chooses the threshold on the
// first half of the trials and evaluates it, once, on the second half, so
// the stated confidence is honest.
//
// ReducedTuning is the reduced game of private hyperparameter tuning
// (Xiang et al., Fig. 5 and Section 5.2), cheap enough to play millions of
// times (their Section 5.4 plays it 10⁶ times); Run plays any Protocol in
// parallel, reproducibly from a seed, and can stream results to a CSV file
// from which an interrupted audit resumes. The file's header records the
// complete protocol (Config.Protocol: its kind and every parameter), the
// seed and the trial count, with a SHA-256 digest of them: a resume that
// differs in any field, or that would change the trial count (optional
// stopping), is refused naming the field (ErrOtherAudit), so one audit's
// trials can never be counted for another. The trial file is opened
// without waiting on anything but a regular file (a FIFO or a device is
// refused at once) and read only up to the length its header and trial
// count allow. Run plays at most MaxTrials trials.
//
// DPSGDCanary is the worst-case DP-SGD game of Nasr et al. ("Tight
// Auditing of Differentially Private Machine Learning", 2023): X = ∅, a
// Dirac gradient canary whose gradient of norm CanaryGradientNorm·C goes
// through dpsgd's own clipping (dpsgd.ClipFactor, or AutoClipFactor under
// automatic clipping: TestDPSGDCanaryAuditAutoClip), dpsgd.Train's sampling,
// noise and update, on the four-parameter CanaryArch so that 10⁵ trials
// take seconds; the adversary sees every iterate (ObserveAll: the per-step
// likelihood ratio) or the last (ObserveLast: the summed update).
// GDPEstimate fits μ-GDP to a game's statistics, the estimate Nasr et al.
// report beside their bound; it is never a bound. DPSGDCanary takes a
// clipping norm up to MaxCanaryClipNorm and a sampling rate down to
// MinCanarySamplingRate: within them its float32 parameters cannot
// overflow, and outside them Check refuses the settings before any trial.
//
// TunerCanary plays a tuner of dptune's own over such runs (random-stop,
// GP, or grid over TunerSpace's four candidates); with a real Base it is
// Xiang et al.'s NTCV setting. NewDiracCanaries is the audit-only engine
// hook behind every Dirac canary, one or many on distinct coordinates.
//
// Protocols by name. Each protocol's file registers a Game (Register):
// its name (`dptune audit NAME`), the Settings its trials depend on (the
// trial file's header records them), whether it trains on real data, its
// parameters' ranges (Bounds, which a command line checks under its flag
// names), its Check before any data is read, and New, which builds the
// Protocol and its Claims — the events an accountant turns into the ε_U
// the audit's ε_L is compared with (Claims.Epsilons). Package job's Audit
// looks the game up (Lookup) and names none; errors that refuse settings
// wrap ErrInvalid.
//
// One-run auditing (Steinke, Nasr & Jagielski 2023, "Privacy Auditing with
// One (1) Training Run"): OneRunGuesses scores the auditor's guesses about
// m canaries of one training run, OneRunPValue is their Theorem 3.1's
// p-value for an (ε, δ) claim, OneRunEpsilon the largest ε it rejects, and
// OneRunAudit the best over guess counts fixed in advance, by a union
// bound.
//
// The standing test that the claim and the implementation agree: built
// with the tag dptune_plant_quarter_noise or dptune_plant_no_clip, dpsgd
// carries a planted bug (noise of σ/4 where the ledger says σ; no
// clipping), and TestPlantedBugCaught requires the tight audit to report
// ε_L above the claimed ε; `make test` runs it with each tag.
package audit
