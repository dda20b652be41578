// Package bench holds dptune's reproducible experiments, each one call that
// takes a context, writes durable JSON (so a long run resumes from its
// cache) and plots its figures with gonum/plot:
//
//   - PerSample: what per-sample gradients cost — examples per second of
//     every engine and the phases of a DP-SGD step (dptune bench persample).
//   - BuildLandscape and SimulateTuners: the landscape of real
//     DP-SGD runs over a grid, and DP-HyPO's GP tuner against uniform
//     random-stop on it (Wang et al. 2023, Table 1; dptune bench tuners).
//   - DoublingFigures: Ding et al.'s doubling tuner, fidelity and iterations
//     (their Figures 3 and 4; dptune bench doubling).
//   - AuditFigures: Xiang et al.'s Figure 6 — the reduced tuning game
//     audited against the generic, GDP and Algorithm 3 bounds — and the
//     DP-SGD canary audit (dptune bench audit).
//   - Vote, VoteFigure2 and VoteReal: DP-Hype's figures, simulated and with
//     real federated runs (dptune bench vote).
//   - Compare and CompareVote: every private tuner at one total budget on
//     the same data, seeds and space, with Student-t intervals (dptune bench
//     compare). The tuners compared by default are tuning.Lineup; a tuner's
//     own settings in a comparison (CompareOptions: its flags, its spec's
//     options at each budget, its part of compare.json) register from its
//     benchmark's file (bench/doubling.go for the doubling tuner).
//   - Scatter: the ScatterNet front end's throughput (kymatio's
//     Scattering2D, J = 2, L = 8, on MNIST's and CIFAR-10's image sizes,
//     one worker and GOMAXPROCS) with the feature-cache build time it
//     implies, and one DP-SGD epoch of each built-in scatter network on its
//     cached features, never building a cache (dptune bench scatter).
//   - WriteReport: one report.md and report.html from every benchmark's
//     JSON, with the papers' results beside ours (dptune bench report).
//     Each output it reads has a registered section (reportKinds); a
//     benchmark's file may register its own (doubling.json's is in
//     bench/doubling.go), and the papers' claims about the compared tuners
//     are data (compareClaims).
//
// Each command's settings as a person gives them are a request
// (CompareRequest, TunersRequest, SeedsRequest, VoteRequest,
// PerSampleRequest, ScatterRequest; AuditFigureConfig.CheckRequest and
// ReportConfig.CheckRequest for the others): it refuses bad settings before
// any work, naming the flag at fault (errors wrapping job.ErrInvalid), and
// makes the experiment's config; dptune binds its flags to it, shows
// progress and prints.
//
// Tuners are found through package tuning's registry; nothing here decides
// what is private: every run goes through job, which owns the release.
// The files they read (reports under WriteReport's inputs, caches) must be
// regular files of bounded size.
package bench
