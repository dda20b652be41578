// Package model defines the networks dptune trains — their specs, shapes,
// parameters, gorgonia (gorgonia.org/gorgonia) graphs, evaluation and
// checkpoints.
//
// A Spec is a network as data: a name and a sequence of layers, like
// PyTorch's nn.Sequential, read from JSON (ParseSpec, LoadSpec) or one of
// the built-in specs (BuiltinSpecs). Each layer is a LayerSpec: a type
// name and that kind's hyperparameters. An Arch is a Spec on an input
// (channels, height, width, classes); Arch.Layers infers every layer's
// shapes (Layer) and the parameter tensors (Tensor). The default network
// is the standard MNIST CNN of Opacus and TensorFlow Privacy, given in
// DP-HyPO (Wang et al., "DP-HyPO: An Adaptive Private Hyperparameter
// Optimization Framework", Appendix E.1), opacus-mnist: 26,010 parameters
// on 1×28×28 inputs.
//
// # Layer kinds
//
// Every kind of layer is one file, layer_<type>.go: its hyperparameters
// (a struct whose JSON fields are the spec's keys) and their check, its
// output shape, its parameter shapes and initialisation, and its gorgonia
// node. It registers itself by type name (RegisterLayer, in init); no
// other file switches on a kind, and only the built-in specs and
// RandomArch's skeleton (convolutions, flatten, linear layers) name one.
// LayerTypes lists the registered kinds:
// convolution, linear, elementwise activations, pooling, normalisations
// (per example, so DP-SGD's analysis holds; or by statistics of the
// training data estimated privately, datanorm) and flatten. dpsgd's engine
// finds its own rules for a kind by the same type name.
//
// # Fixed front ends
//
// A scatter layer (ScatterSpec: the scattering transform of package
// model/scatter, kymatio's Scattering2D) may only be a network's first
// layer. It has no parameters and does not depend on the data, so neither
// the graph nor dpsgd's engine computes it: a network with a front end
// reads the transform's output (Arch.Input: 81·C × H/4 × W/4 for J = 2,
// L = 8), computed once per dataset from Arch.FrontEnd, and the layer is
// the identity on it. The built-in scatter-linear-mnist,
// scatter-cnn-mnist, scatter-linear-cifar10 and scatter-cnn-cifar10 are
// Tramèr & Boneh's ScatterNet models.
//
// # Data normalisation and buffers
//
// A datanorm layer (DataNormSpec) standardises each channel of the
// network's input by a mean and variance of the training data, estimated
// privately once before training (dpsgd's data normalisation, in the
// run's ledger). It must read the network's input: the first layer, or the
// second after the scatter front end. Its μ and v are buffers, not
// parameters (Net.Buffers, Net.BufferTensors; a kind with buffers
// implements bufferKind): no gradient, no clipping, noise or update, but
// saved in the checkpoint's buffers.bin and read by the graph (when it is
// built) and by dpsgd's engine, so that a reloaded model computes what the
// trained one did.
//
// To add a layer kind: write model/layer_<type>.go (a struct implementing
// LayerKind, registered in init; paramKind if it has a weight and bias,
// randomKind for RandomArch to draw it, and an onnx method for its ONNX
// nodes, which WriteONNX (onnx.go) calls) and dpsgd/layer_<type>.go (its
// forward pass, backward pass and per-example gradient or norm rule,
// registered under the same name), with tests: the float64 reference in
// reference_test.go and dpsgd's comparison with gorgonia's batch-of-one
// autodiff; job's ONNX Runtime test covers the new kind's nodes.
//
// A Net is written for other tools by WriteONNX (onnx.go: raw pixels in,
// logits out, types in package onnxpb generated from ONNX's onnx.proto) and
// WriteSafetensors (safetensors.go: torch.nn.Sequential's state_dict keys).
// A checkpoint's metadata records the Input its training data was read
// with: class names and pixel constants.
//
// # Parameters and graphs
//
// Parameters live in one flat []float32 (Net.Params) in PyTorch's
// named_parameters order and layouts — conv weights [out, in, kh, kw],
// linear weights [out, in], a layer norm's γ and β the shape of its input,
// biases [out] — so that gradients, clipping, noise and updates work on a
// single vector and checkpoints map one-to-one onto a PyTorch state_dict.
// New initialises them as PyTorch does.
//
// A Graph is the network built with gorgonia for a fixed batch size B,
// each layer by its kind's node. In Forward mode it computes the logits;
// in ParamGrads mode also the gradient of the summed cross-entropy with
// respect to every parameter (gorgonia's autodiff). It defines what a
// network computes: Net.Evaluate runs it, and dpsgd's native engine is tested
// against it on a batch of one per example.
//
// A network with buffers also has buffers.bin (see Save); one without has
// the checkpoint it had before buffers existed.
//
// LoadSpec and Load read only regular files (a FIFO or a device is refused
// without blocking, see internal/fsx): a spec of at most MaxSpecBytes, a
// params.bin of at most the size the architecture needs.
package model
