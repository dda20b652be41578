// Package model defines the convolutional network dptune trains, with
// gorgonia (gorgonia.org/gorgonia), and its parameters, evaluation and
// checkpoints.
//
// The network is the standard MNIST CNN of Opacus and TensorFlow Privacy,
// given in DP-HyPO (Wang et al., "DP-HyPO: An Adaptive Private
// Hyperparameter Optimization Framework", Appendix E.1):
//
//	conv1  C→16, 8×8, stride 2, padding 3 → ReLU → max-pool 2×2 stride 1
//	conv2  16→32, 4×4, stride 2           → ReLU → max-pool 2×2 stride 1
//	flatten (channel-major, as PyTorch's x.view)
//	fc1    → 32 → ReLU
//	fc2    32 → 10 (logits); softmax cross-entropy
//
// For 1×28×28 inputs (MNIST) the flattened size is 32×4×4 = 512 and the
// network has 26,010 parameters; for 3×32×32 inputs (CIFAR-10) it is
// 32×5×5 = 800.
//
// Parameters live in one flat []float32 (Net.Params) in PyTorch's
// named_parameters order and layouts — conv weights [out, in, kh, kw], linear
// weights [out, in], biases [out] — so that gradients, clipping, noise and
// updates work on a single vector and checkpoints map one-to-one onto a
// PyTorch state_dict.
//
// A Graph is the network built for a fixed batch size B. A Graph in
// LayerGrads mode runs forward and backpropagates a summed cross-entropy loss
// only down to the layer outputs, exposing each layer's input and output
// gradient (a Trace): the raw material of per-sample gradients, which
// dpsgd computes from it. ParamGrads mode differentiates with respect to the
// parameters as gorgonia normally does; it is the reference the per-sample
// engine is tested against. Forward mode only computes logits.
//
// LoadSpec and Load read only regular files (a FIFO or a device is refused
// without blocking, see internal/fsx): a spec of at most MaxSpecBytes, a
// params.bin of at most the size the architecture needs.
package model
