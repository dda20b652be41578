// Package archtest holds tests of the source tree as a whole, not of one
// package: rules that keep the design's shape as the tree grows. It has no
// code of its own.
//
// TestNamesConfined: adding a layer kind, a tuner, an accountant or a
// dataset is one file (per side, for a layer) plus its test, and nothing
// else switches on its name. The test reads every registered name from the
// registries and fails when a non-test Go file outside the name's own
// files names it.
package archtest
