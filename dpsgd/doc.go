// Package dpsgd is dptune's base algorithm: DP-SGD (Abadi et al. 2016,
// "Deep Learning with Differential Privacy", Algorithm 1) with Poisson
// sampling, per-example gradient clipping, Gaussian noise and SGD(+momentum)
// updates, and the per-sample gradient engine behind it.
//
// One step, with N training examples, sampling rate q, clipping norm C and
// noise multiplier σ:
//
//  1. draw a Poisson sample B: each example independently with probability q;
//  2. compute each example's own gradient g_i (of its cross-entropy loss)
//     with respect to all parameters;
//  3. clip it to L2 norm C over all parameters: ḡ_i = g_i · min(1, C/(‖g_i‖₂ + 10⁻⁶));
//  4. sum, add N(0, σ²C²) independently to every coordinate;
//  5. divide by the expected batch size qN — a constant fixed before
//     training, never the realised |B|, which would leak it (Opacus issues
//     #571 and #819);
//  6. update: v ← μ·v + g, θ ← θ − η·v (PyTorch's SGD with momentum μ).
//
// The privacy cost of T steps is the event
// accounting.DPSGD(σ, q, T); Train returns it for the caller's ledger.
//
// # Automatic clipping
//
// With Config.Clipping = AutomaticClipping, step 3 is automatic clipping
// (Bu et al. 2023, "Automatic Clipping: Differentially Private Deep
// Learning Made Easier and Stronger", AUTO-S, Algorithm 1):
// ḡ_i = g_i/(‖g_i‖₂ + γ), stability constant γ = Config.AutoClipGamma
// (0.01 by default). Every ḡ_i has norm below 1, so the sum's sensitivity
// is 1 and step 4 adds N(0, σ²): the mechanism, the event and ε are flat
// clipping's at C = 1, and there is no clipping norm to choose. When every
// gradient is clipped, automatic clipping at learning rate η steps as flat
// clipping at C does with learning rate η/C (AutoClipFactor).
//
// # Privacy-spending stages
//
// A layer whose engine rule estimates something of the training set before
// the first step spends privacy beside the steps: a privacy-spending stage
// (Stage). Its rule says so (rule.spend) with the Mechanism of its estimate,
// which gives the estimate's event, given the training set's nominal size,
// and runs it; Stages lists a network's stages, the one question every
// caller asks. PlannedEvent composes the events of the stages a run
// estimates itself before its steps' event, so every calibration of σ and
// every tuner's base event counts them; Train runs each stage's estimate
// before the first step, its noise from the run's own stream named after
// the layer's type (so seeded runs of other networks are unchanged), and
// reports their events in Result.Stages. A caller that cannot count them
// (partition runs, the vote's clients) refuses a network that has one.
//
// The datanorm layer (model.DataNormSpec) is the stage there is: Train
// estimates its per-channel mean and variance on the training set's
// features with the Gaussian mechanism (DataNormStats: Tramèr & Boneh 2021,
// Section 3, with fixed public clipping norms in place of their median of
// the private norms) and stores them in the network's buffers, at the cost
// of two Gaussian mechanisms at sampling rate 1 (DataNorm.Event). A tuning
// instead estimates the statistics once (EstimateDataNorm), counts that
// estimate once, and releases it to every run as Config.Released: such a
// run copies it into its buffers, estimates nothing, and its PlannedEvent
// is its steps alone.
//
// Per-sample gradients come from an Engine. The default engine (NewEngine)
// evaluates and differentiates the network natively — positions-major
// activations, every matrix product a float32 GEMM on internal/gemm's
// AVX2/FMA kernel — and builds per-example gradients the way Opacus's grad
// samplers do: for a convolution one small GEMM per example of its output
// gradient and unfolded input, always instantiated so that the factor
// comes from the norm of exactly what is added (never the Gram-matrix ghost
// norm of Bu et al. 2023's mixed ghost clipping, which cancellation makes
// underestimate; see convStage); for a linear layer only the norm
// ‖a_i‖²·‖g_i‖² (+‖g_i‖² for the bias), with the clipped sum one GEMM of
// the scaled output gradients (Goodfellow 2015; Li et al. 2022 "ghost
// clipping"); for a normalisation's γ and β the per-example gradients
// themselves. The model's gorgonia graph defines the network:
// NewReferenceEngine runs it on a batch of one per example and is the test
// oracle; NewBatchGradEngine is gorgonia's own batched autodiff, the
// non-private baseline. Train measures each phase of a step (Timings).
//
// # Layer rules
//
// The engine's part of each layer kind is one file, layer_<type>.go,
// named like the kind's file in model: a stage (forward pass, backward
// pass and, for a kind with parameters, its per-example norm, clipped sum
// and layouts) registered under the kind's type name in init (register; an
// elementwise activation whose derivative is read off its output registers
// with registerActivation, and the convolution or linear layer before it
// then applies it in place). native.go knows no kind: it builds one stage
// per layer from the registry, and NewEngine returns an error naming the
// first layer whose type has no rules. A kind may also register a rule for
// the network's first stage, whose input gradient nobody needs: a group
// norm followed by flatten and a linear layer (ScatterNet + GN + linear)
// then becomes one fused stage, layer_groupnorm_linear.go, that never
// forms the affine output or the linear layer's input gradient. Its
// normalised input does not depend on the parameters, so a run of two
// epochs or more computes it once per training example
// (first_stage_cache.go).
//
// # Workers and reproducibility
//
// A step's batch is cut into fixed shards (8 up to 575 examples, then
// one per 64 examples up to 64 shards, so a large batch has work for up
// to 64 cores), each summed from zero and added in shard order, and the
// engine's workers (NewEngineWorkers; Train takes as many as its context
// gives cores, see runner.Local) share the shards: a seeded run trains the same float32 parameters with any number
// of workers on the same GEMM kernel.
//
// A network whose first layer is a fixed front end (model.ScatterSpec)
// reads that layer's output as its input (model.Arch.Input): the x given
// to an Engine, Evaluate and Train's dataset holds the precomputed
// features, not the images.
//
// To add a layer: two files, model/layer_<type>.go (spec, shapes,
// parameters, gorgonia node; see package model) and dpsgd/layer_<type>.go
// (its rules, with its Mechanism when it spends privacy), and their tests — the kind against gorgonia's batch-of-one
// autodiff to 1e-5 (checkAgainstReference), as every kind is, and in
// RandomArch's random specs, which TestEngineMatchesReference draws eight
// of per run.
package dpsgd
