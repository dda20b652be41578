// Package tuning chooses DP-SGD hyperparameters privately: a search space, a
// Trainer (the base algorithm: candidate → trained model, score, privacy
// event), and tuners whose result — selected hyperparameters, model, released
// score and ledger — is all that leaves them.
//
// A tuner is a Tuner registered by name (Register, Lookup, Names). It owns
// its privacy plan: Check refuses what it cannot run before any data is read
// (errors wrap ErrInvalid), Event is the whole tuning's ledger event for one
// base run's event, Accountant counts it, Label names it, and Options and
// Uses declare its own settings and the common ones it reads, from which the
// command line makes its flags. A tuner's own settings are one struct
// (GPOptions, DoublingOptions, VoteOptions) whose field tags give each
// option's name, default and help (options.go): Options is OptionsOf it, and
// the tuner decodes Spec.Options, Values by name, into it, refusing a name
// it does not declare or a value of the wrong type (CheckOptions).
// Calibration is one generic call for every tuner, Calibrate:
// accounting.CalibrateNoise over σ ↦ Event(base(σ)). A Runner tunes around
// whole training runs (Run); a Partitioned tuner is given the training data
// cut into keyed disjoint parts by its caller (package job); a Federated
// tuner plans a job for clients that each hold a share of the data (Plan),
// which its caller serves and whose clients it starts.
//
// The tuners:
//
//   - randomstop (randomstop.go): random-stop tuning (Liu & Talwar 2019;
//     Papernot & Steinke 2022; Algorithm 2 of Xiang et al.): K ∼ TNB(η, γ)
//     or Poisson(μ) runs on uniformly drawn candidates, the best released;
//     its event is accounting.RepeatAndSelect of the base run's. K is drawn
//     by DrawRuns, exactly from the distribution the accounting assumes: a
//     mean above accounting.MaxMeanRuns is refused before any work, and a
//     draw above MaxRuns is an error, never a truncated K. It also takes
//     the xiang-o accountant (XiangEvent: Xiang et al.'s Algorithm 3, an
//     APPROXIMATION) for public validation.
//   - gp (gptuner.go, with the Gaussian process in gp.go and the density
//     projection in projection.go): DP-HyPO (Wang et al. 2023, Framework 1
//     and Algorithm 3): as randomstop, but each candidate is drawn from a
//     Gaussian-process UCB softmax projected onto densities within [c, C]
//     times the uniform prior; its event is
//     accounting.AdaptiveRepeatAndSelect (Theorem 1), K ∼ TNB only.
//   - doubling (doubling.go, with the part runs in partitioned.go and their
//     curator-side score cache in cache.go): Ding et al.'s Algorithm 1 made
//     unconditional by an iteration cap — every candidate trained on k
//     disjoint parts, the capped doubling AboveThreshold search
//     (CappedSearch) on Laplace-noised mean scores, one final DP-SGD run; its event is the
//     search at its cap (and private part runs) composed with the final
//     run's. A Partitioned tuner.
//   - grid (grid.go): the naive baseline, every candidate trained once and
//     the best released; its event is the composition of all |S| runs.
//   - vote (vote.go): DP-Hype's federated vote — clients holding shares of
//     the data each train every candidate locally and vote for their ℓ
//     best with distributed discrete Gaussian noise over a secure sum
//     (client-level, replace-one-client), then FedAvg trains the winner
//     (DP-SGD on every client, DP-FedAvg, or not private). The file is the
//     adapter that makes the vote a tuner: its options, checks and Event
//     (the vote at the fewest survivors the plan allows, composed with the
//     final training's event) and Plan, the job every client is sent. The
//     protocol itself (gRPC server and clients, secure aggregation) is the
//     top-level package federated; package job serves it (job.Tune,
//     job.RunVote). A Federated tuner, registered from its own file.
//
// The default as a candidate: a Spec's Default (DefaultCandidate: a
// network's published settings) is one more candidate beside the space's
// grid, at index Space.Size(), for a tuner whose Uses.Default says so —
// grid and doubling score it once, randomstop draws it at each run with a
// fixed prior weight (Spec.DefaultWeight; its doc says why the theorems
// still hold); gp does not take it. The trainer's event covers its run
// (Hyper.Default). EpsilonComponents splits a tuning's ledger into its
// selection and its final run (components.go).
//
// builtin.go registers the built-in tuners in the order help text and
// errors list them, and holds Lineup, the order a benchmark compares them
// in; vote.go registers the vote after them. A tuner may give an Example
// for help text (Exampler); a partitioned tuner's report prints its own
// summary (PrintSummary) and says what it released and cost (Outcome,
// Cost).
//
// A search space (Space, Dim, Candidate, ParseSpace) is package
// tuning/space's, a leaf that package federated shares; this package's
// names for them are aliases. Built-in search spaces are registered by
// name too (RegisterSpace, BuiltinSpace, SpaceNames): space.go's DP-HyPO
// grids, spaces_scatter.go's ScatterNet spaces, and a tuner's own from its
// file (doubling.go registers mnist-doubling).
//
// A space's dimensions are numeric grids or categorical choices
// (Categorical; a candidate's Labels name its choices). hyper.go knows the
// dimensions of a DP-SGD run (learning rate, clipping norm, momentum, batch
// size, epochs, schedule, network; CheckDPSGDSpace) and turns a candidate
// into its network and dpsgd.Config (Hyper.Run); Hyper.Event is one run's
// privacy event, the worst over the candidates' batch sizes, epochs and
// networks (accounting.WorstCase) when they differ.
//
// A search space's name and its dimensions' names are printable text (no
// control bytes, valid UTF-8): they are shown on the curator's terminal.
package tuning
