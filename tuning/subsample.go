package tuning

import (
	"math"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/privacy/accounting"
)

// Tuning on a subsample: Koskela & Kulkarni, "Practical Differentially
// Private Hyperparameter Tuning with Subsampling" (NeurIPS 2023), the
// variant whose final model trains on the whole data set. The selection
// (every candidate run and its private score) runs on one Poisson subsample
// X₁ of the training set, each example in it independently with
// probability q under a secret key, drawn once for the whole selection;
// only the selected settings leave it; one final DP-SGD run of them on the
// whole set is the released model. The selection is one mechanism of X₁,
// so its RDP is amplified by q as a whole (accounting.PoissonSampled of the
// tuner's event: Zhu & Wang 2019, Theorem 6, for a general mechanism) and
// composed with the final run's.

// SubsampleRule says how the settings selected on the tuning subset carry
// over to the final run on the whole set. A candidate on X₁ keeps its
// sampling rate B/N and its epochs, so its steps (and its privacy event)
// are the whole set's, and its expected batch is q·B: the gradient's
// signal (the mean of the clipped per-example gradients) has the same
// scale on X₁ and on the whole set, and only the noise on it, σC/(qB)
// against σ_f·C/B, differs. The final run trains the selected learning
// rate, clipping norm, momentum, batch size and epochs unchanged at its
// own noise multiplier σ_f (calibrated to the final run's share of ε). The
// candidates' runs are noisier than the final run (by σ/(q·σ_f)), so the
// rule is conservative where more noise favours a smaller step; it is
// fixed before any data is read, so carrying the settings over is
// post-processing.
//
// What the two scaling rules the field uses would change, and why neither
// is applied: Sander, Stock & Sablayrolles ("TAN Without a Burn", ICML
// 2023) hold the steps and the noise on the averaged gradient σ/B fixed and
// scale the batch with σ — matching the candidates' noise to the final
// run's would need σ = q·σ_f on the subset, which makes each candidate run
// far less private and undoes the amplification (the selection would cost
// more than it does on the whole set); Panda et al. ("A New Linear Scaling
// Rule for Private Adaptive Hyperparameter Optimization", ICML 2024) scale
// the product of learning rate and steps linearly in ε between budgets,
// with full batches — here the candidates and the final run share steps
// and sampling rate, and only the noise differs. Which rule carries the
// selection best is a measurement (docs/report), not a theorem.
const SubsampleRule = "same sampling rate, epochs (steps), learning rate, clipping norm and momentum; σ calibrated to the final run's share"

// SubsampledSelection is the privacy event of a selection (a tuner's Event)
// run on a Poisson subsample of ratio q of the training set: the whole
// selection amplified once, accounting.PoissonSampled{q, selection}. q = 0
// (no subsample) returns selection itself.
func SubsampledSelection(q float64, selection accounting.Event) accounting.Event {
	if q == 0 {
		return selection
	}
	return accounting.PoissonSampled{SamplingRate: q, Event: selection}
}

// SubsampledLedger is ledger l of a selection that ran on a Poisson
// subsample of ratio q: its entries composed and amplified as one event
// (SubsampledSelection), under label, since every run of the selection read
// the same subsample (amplifying each entry apart would count each as if
// it had its own subsample). An empty l (nothing ran) stays empty; q = 0
// returns l.
func SubsampledLedger(q float64, label string, l accounting.Ledger) accounting.Ledger {
	if q == 0 || len(l.Entries) == 0 {
		return l
	}
	var e accounting.Event = l.Entries[0].Event
	if len(l.Entries) > 1 {
		es := make([]accounting.Event, len(l.Entries))
		for i, en := range l.Entries {
			es[i] = en.Event
		}
		e = accounting.Composed{Events: es}
	}
	var out accounting.Ledger
	out.Add(label, SubsampledSelection(q, e))
	return out
}

// MinSubsampleValSize is the fewest nominal examples a tuning subset may
// hold for its runs (q·n, so that it is empty with probability below
// e^−100) and for its private scores (q·n_val).
const MinSubsampleValSize = 100

// CheckSubsample returns an error wrapping ErrInvalid unless a tuning
// subset of ratio q ∈ (0, 1] can hold the runs of h over space s: every
// candidate's expected batch q·B (B its batch size) at least one example,
// at least MinSubsampleValSize of h.NominalN training examples in the
// subset, and, with private scores on valSize nominal examples (0: public), at
// least MinSubsampleValSize of them in the subset. It also refuses a run
// that estimates its own privacy-spending stage (dpsgd.OwnStages: a
// network with a datanorm layer that does not take h.Norm's one estimate):
// its estimate divides by the whole set's nominal size.
func CheckSubsample(q float64, h Hyper, s Space, valSize int) error {
	if !(q > 0 && q <= 1) {
		return invalidf("subsample ratio %v is outside (0, 1]", q)
	}
	h.Subsample = q
	for _, c := range h.runShapes(s) {
		arch, cfg, err := h.Run(c)
		if err != nil {
			return invalid(err)
		}
		if cfg.ExpectedBatchSize < 1 {
			return invalidf("subsample ratio %v: a candidate's expected batch on the subset is %.3g examples (ratio × batch size %v), under one; raise the ratio or the batch size", q, cfg.ExpectedBatchSize, cfg.ExpectedBatchSize/q)
		}
		if st := dpsgd.OwnStages(arch, cfg); len(st) > 0 {
			return invalidf("subsample ratio %v: a candidate's network estimates its own %s layer's statistics, which divide by the whole set's size; tune it without a subsample", q, st[0].Type)
		}
	}
	if q*float64(h.NominalN) < MinSubsampleValSize {
		return invalidf("subsample ratio %v keeps about %.0f of the %d training examples, under %d; raise the ratio", q, q*float64(h.NominalN), h.NominalN, MinSubsampleValSize)
	}
	if valSize > 0 && q*float64(valSize) < MinSubsampleValSize {
		return invalidf("subsample ratio %v leaves %.0f of the %d validation examples in the subset, under %d; raise the ratio or the validation size", q, q*float64(valSize), valSize, MinSubsampleValSize)
	}
	return nil
}

// SubsampleValSize is the nominal validation size of a tuning subset of
// ratio q of n nominal validation examples: the divisor of its private
// score, round(q·n), at least 1.
func SubsampleValSize(q float64, n int) int {
	if q == 0 {
		return n
	}
	return max(1, int(math.Round(q*float64(n))))
}
