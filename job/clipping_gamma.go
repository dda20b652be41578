package job

import "github.com/dptune/dptune/dpsgd"

// MinAutoClipGamma is the smallest stability constant automatic clipping
// takes (dpsgd.MinAutoClipGamma: 10⁻⁶; below it a zero gradient's factor
// 1/(‖g‖ + γ) once left float32 and turned a batch's sum into NaN).
const MinAutoClipGamma = dpsgd.MinAutoClipGamma

// CheckAutoClipGamma returns an error unless gamma is a stability constant
// automatic clipping can take: finite and at least MinAutoClipGamma
// (dpsgd.CheckAutoClipGamma, the check TrainSpec, TuneSpec and the audit
// make), for the CLI's flags.
func CheckAutoClipGamma(gamma float64) error { return dpsgd.CheckAutoClipGamma(gamma) }
