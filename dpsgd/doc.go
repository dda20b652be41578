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
// Per-sample gradients come from an Engine. The default engine (NewEngine)
// evaluates and differentiates the network natively — positions-major
// activations, every layer one float32 GEMM on internal/gemm's AVX2/FMA
// kernel — and builds per-example gradients the way Opacus's grad samplers
// do: for a convolution one small GEMM per example of its output gradient and
// unfolded input; for a linear layer only the norm ‖a_i‖²·‖g_i‖²
// (+‖g_i‖² for the bias), with the clipped sum one GEMM of the scaled output
// gradients (Goodfellow 2015; Li et al. 2022 "ghost clipping"). The model's
// gorgonia graph defines the network: NewReferenceEngine runs it on a batch of
// one per example and is the test oracle; NewBatchGradEngine is gorgonia's
// own batched autodiff, the non-private baseline. Train measures each phase
// of a step (Timings).
package dpsgd
