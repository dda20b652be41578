// Package bench holds dptune's reproducible experiments: what per-sample
// gradients cost (PerSample), with plots of the results.
package bench
