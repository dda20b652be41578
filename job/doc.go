// Package job is dptune's library front door: one documented call per job,
// each owning every privacy decision of that job — nominal sizes,
// calibration, validation splits, the budget charge, what is evaluated and
// what goes into the release. The dptune command only parses flags, shows
// progress and prints what these calls return; a Go program gets exactly
// the same guarantees by calling them.
//
// # What dptune does, one call each
//
// Train a private image classifier with DP-SGD to a target ε:
//
//	src, _ := job.Dataset("mnist", "")
//	rel, _, err := job.Train(ctx, job.TrainSpec{Data: src, Epsilon: 3, Delta: 1e-5,
//		ClipNorm: 1, BatchSize: 256, Epochs: 10, LearningRate: job.DefaultLearningRate})
//	err = rel.Save("out/mnist")
//
// Choose hyperparameters privately, under one total budget for tuning and
// release, with any tuner registered in package tuning (Tuners lists them;
// the tuner checks the spec, supplies the whole tuning's event for one
// calibration, and runs):
//
//	space, _ := tuning.LoadSpace("mnist-dphypo")
//	rel, diag, err := job.Tune(ctx, job.TuneSpec{Data: src, Tuner: "gp", Space: space,
//		Epsilon: 8, Delta: 1e-5, Epochs: 3, BatchSize: 256,
//		Repetitions: reps, Options: tuning.DefaultGPOptions().Values(),
//		Validation: "private", ValSize: 5000, ScoreNoise: 20})
//
// The vote (DP-Hype, a tuning.Federated tuner) goes through the same call:
// its settings are its options, and the spec's Federation says where its
// server listens and who starts its clients (nil: a loopback server and
// clients in this process):
//
//	rel, _, err := job.Tune(ctx, job.TuneSpec{Data: src, Tuner: "vote", Epsilon: 8, Delta: 1e-5,
//		BatchSize: 64, Options: tuning.Values{"clients": 5, "vote-epsilon": 2.0}})
//
// Answer an accounting question — ε of a run, σ for a target, the steps a
// budget allows — alone or inside random-stop tuning:
//
//	res, err := job.Account(ctx, job.AccountSpec{Solve: "epsilon", NoiseMultiplier: 1.1,
//		SamplingRate: 256.0 / 60000, Steps: 14063, Delta: 1e-5, Accountant: "pld"})
//
// Check a claim from below: Audit plays Xiang et al.'s distinguishing game
// (the tight DP-SGD audit, every tuner's, the natural canary's) and
// AuditOneRun audits one real training run with canaries (Steinke, Nasr &
// Jagielski 2023), reporting ε_L beside the run's ε:
//
//	res, err := job.AuditOneRun(ctx, job.OneRunSpec{Train: trainSpec, Canaries: 1000, Confidence: 0.95})
//
// Datasets and accountants are chosen by name from one registry each
// (data.Register, accounting.Register, in each one's own file): Dataset,
// DatasetNames, NominalSize and LoadSpace (a dataset's default search
// space), Accountant, Accountants and DescribeAccountant answer from them,
// with the help texts and errors a command shows.
//
// Keep one honest budget across runs: create a budget file
// (BudgetRequest.Init, or `dptune budget init`) and name it in every spec's Budget;
// each job reserves its worst case before it reads the data and is refused
// (ErrInvalid) if the file's RDP filter would exceed the cap.
//
// A command's settings as a person gives them are a request (TrainRequest,
// TuneRequest, AccountRequest, AuditRequest, BudgetRequest, PredictRequest,
// VoteClientRequest, VoteCertsRequest): its Spec (or Init, Config, Join,
// Write) checks them before any work, names the flag at fault in each
// refusal (wrapping ErrInvalid), and makes the job's spec; its Given says
// which settings were given, so that a built-in network's own settings
// stand for the others. `dptune` fills the requests from its flags, shows
// progress and prints; a Go caller builds the specs directly, or a request.
//
// A network with a fixed front end (a scatter first layer, Tramèr &
// Boneh's ScatterNet models) trains and is evaluated on the front end's
// features in place of the images: loading a Source computes them once
// with every core (package model/features) and keeps them in the curator
// directory Source.Features.Dir, keyed by the data's content and the
// transform, so later runs start training at once. The transform is
// data-independent and costs no privacy; the cache holds the private data,
// transformed, and is written 0600 in a 0700 directory. Every job reads
// such a network's data this way: a tuning's runs and its validation set
// (private or public), its jobs on a worker (which computes the same
// features, into WorkerFeatureCache's directory, and cuts the same splits
// from them), a landscape, and the natural-canary audit (the features of
// its base images and of its canary image). A tuning whose space leaves
// out the learning rate or the clipping norm takes the built-in network's
// own (NetworkDefaults).
//
// Train on your own images: FolderDataset reads an ImageFolder
// (DIR/train/<class>/*, DIR/test/<class>/*) as a Source with a declared
// nominal size and public pixel constants. A TrainSpec with Checkpoint
// (CheckpointPath: OUT-curator/checkpoint, never in the release) keeps an
// authenticated checkpoint after every epoch (checkpoint.go), and
// ResumeTrain continues a killed, stopped or failed run from it: bit for
// bit with the same ledger when seeded; unseeded, with the process it
// continues counted at its worst case and the steps it runs charged anew,
// so a budget file never counts less than what ran.
//
// Use a model elsewhere: Predict labels image files with a saved model
// (read as its training data was: model.Input), and Export writes it as
// ONNX or safetensors with the release's public facts (export.go).
//
// Measure what per-sample gradients cost: bench.PerSample.
//
// # Releases
//
// A job returns a Release — the model, the selected hyperparameters, the
// released score, the guarantee, the ledger and the report — and, apart, a
// NotPrivateDiagnostics for the data curator (the number of tuning runs,
// every run's score, the realised batch sizes, the wall time), which must
// never be published. Release.Save writes model.json, params.bin (and
// buffers.bin for a network with buffers: a datanorm layer's statistics)
// and report.json (or failed-report.json, moving an earlier release to
// previous/, and refusing a previous that is a symbolic link), each file
// through a temporary file of a random name renamed into place, so that a
// symbolic link planted in the directory is replaced, never written
// through, and leaves nothing partial when a write fails; CheckOut,
// CheckFile and CheckRoom check the outputs before a job starts.
//
// Rules every job keeps:
//   - Sizes are nominal: sampling rates, divisors and report fields use
//     Source.NominalN and the declared validation size, never a count of the
//     private data.
//   - Nothing is released as a float with float noise: private scores are
//     integer counts plus discrete Gaussian noise; DP-SGD noise is drawn in
//     secure mode unless a seed is given.
//   - The ledger covers every mechanism that touched the private data, even
//     when the job fails or is cancelled. A network with a privacy-spending
//     layer (dpsgd.Stages: a datanorm layer's data normalisation, two
//     Gaussian mechanisms, dpsgd.DataNorm) adds its estimate to every
//     run's event: Train's ledger has it as its own entry, the calibration
//     of σ (dpsgd.PlannedEvent) and the budget's reservation count it, and
//     an estimate that alone spends the target ε is refused. A tuning
//     around whole runs (grid, random-stop, GP) instead estimates it once
//     on the whole training set before any run (tuning.SharedDataNorm): its
//     ledger opens with that one estimate, the runs and the final run take
//     it as a public input (post-processing), and the runs' σ is calibrated
//     for the estimate composed with the tuner's event (and the final run);
//     the doubling tuner's final run estimates its own, its only one. The vote tuner and private partition
//     runs do not take such a network (dpsgd.Stages, asked once).
//   - A private training run cancelled before its last step releases, and
//     is charged, the ledger and ε of the whole planned run: when to stop
//     may have followed the non-private training loss shown live.
//
// # Errors
//
// A request that cannot be run is refused before any work with an error
// wrapping ErrInvalid (the command maps it to exit status 2). Once the data
// is touched, a job always returns its Release with its error: cancelled
// (ctx's error; the command exits 130) or failed (Release.Failed; only the
// ledger is released).
package job
