// Package tuning chooses DP-SGD hyperparameters privately: a search space, a
// Trainer (the base algorithm: candidate → trained model, score, privacy
// event), and tuners whose result — selected hyperparameters, model, released
// score and ledger — is all that leaves them (DESIGN.md, "What is
// released").
//
// Tuners:
//
//   - RandomStop: random-stop tuning (Liu & Talwar 2019; Papernot & Steinke
//     2022; Algorithm 2 of Xiang et al.): K ∼ TNB(η, γ) or Poisson(μ) runs
//     on uniformly drawn candidates, the best released. K is drawn by
//     DrawRuns, exactly from the distribution the accounting assumes: a mean
//     above accounting.MaxMeanRuns is refused before any work, and a draw
//     above MaxRuns is an error, never a truncated K.
//   - GP: DP-HyPO (Wang et al. 2023, Framework 1 and Algorithm 3): as
//     RandomStop, but each candidate is drawn from a Gaussian-process UCB
//     softmax projected onto densities within [c, C] times the uniform prior.
//
// Their privacy cost is one ledger event, accounting.RepeatAndSelect or
// accounting.AdaptiveRepeatAndSelect of the base run's event; the base run's
// noise multiplier is calibrated so the whole pipeline meets the user's
// total (ε, δ) (CalibrateBase).
//
// A search space's name and its dimensions' names are printable text (no
// control bytes, valid UTF-8): they are shown on the curator's terminal.
package tuning
