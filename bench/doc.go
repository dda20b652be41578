// Package bench holds dptune's reproducible experiments: what per-sample
// gradients cost (PerSample), with plots of the results. The experiments
// that run long take a context and stop when it is done; the files they
// read (reports under WriteReport's inputs, caches) must be regular files
// of bounded size.
package bench
