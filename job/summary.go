package job

import (
	"fmt"
	"io"
	"strings"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// A report prints its own summary for the curator's terminal
// (PrintSummary), as a tuner's own report does (tuning.DoublingReport):
// the command line prints it after saving the release, and a Go caller
// gets the same text.

// PrintSummary prints r for the curator's terminal: the selection (a
// dimension the space lacks shown with the value every run took), its
// validation score and test accuracy, the total ε beside one run's, the ε
// components, the final run and the runs' settings; never the number of
// runs.
func (r *TuneReport) PrintSummary(w io.Writer) {
	if r.Selected == nil {
		fmt.Fprintln(w, "released       nothing (no run was made, every run failed, or tuning was interrupted)")
	} else {
		hyper := func(name string) string {
			if v, ok := r.Selected[name]; ok {
				return fmt.Sprintf("%.4g", v)
			}
			if v, ok := r.Fixed[name]; ok {
				return fmt.Sprintf("%.4g (the network's own)", v)
			}
			if name == tuning.LearningRate {
				return fmt.Sprintf("%.4g (fixed)", DefaultLearningRate)
			}
			return "1 (fixed)"
		}
		clip := "clipping norm " + hyper(tuning.ClipNorm)
		if r.Clipping != "" {
			clip = DescribeClipping(r.Clipping, 1, r.AutoClipGamma)
		}
		fmt.Fprintf(w, "selected       learning rate %s, %s\n", hyper(tuning.LearningRate), clip)
		if o := tuning.OtherSettings(r.Selected, r.SelectedChoices); o != "" {
			fmt.Fprintf(w, "               %s\n", o)
		}
		if b := r.Baseline; b != nil && b.SelectedIsBaseline != nil {
			verdict := "not the baseline's settings"
			if *b.SelectedIsBaseline {
				verdict = "the baseline's settings"
			}
			fmt.Fprintf(w, "               %s (compare: %s)\n", verdict, b.Command)
		}
		fmt.Fprintf(w, "validation     %.4f (%s score)\n", *r.ValidationScore, r.Validation)
		if r.TestAccuracy != nil {
			fmt.Fprintf(w, "test accuracy  %.4f\n", *r.TestAccuracy)
		}
	}
	fmt.Fprintf(w, "privacy        ε = %.4f, δ = %g in total (%s): one run alone ε = %.4f, tuning overhead %.4f\n",
		r.Epsilon, r.Delta, r.Accountant, r.BaseEpsilon, r.TuningOverhead)
	printComponents(w, r.EpsilonComponents)
	if r.FinalNoiseMultiplier > 0 {
		fmt.Fprintf(w, "final run      the released model: σ = %.4f, q = %.6g, %d steps on the whole training set\n", r.FinalNoiseMultiplier, r.FinalSamplingRate, r.FinalSteps)
	}
	if r.Approximate {
		fmt.Fprintf(w, "               APPROXIMATE (Xiang et al.'s Algorithm 3, not a proved bound); Papernot–Steinke's proved ε of the same run: %s\n", fmtEpsilon(r.GenericEpsilon))
	}
	if r.PerCandidate {
		fmt.Fprintf(w, "runs           %s, each σ = %.4f, batch size and epochs per candidate (each run counted as the costliest), %s\n", r.Repetitions, r.BaseNoiseMultiplier, noiseKind(r.SecureNoise))
		return
	}
	fmt.Fprintf(w, "runs           %s, each σ = %.4f, q = %.6g, %d steps, %s\n", r.Repetitions, r.BaseNoiseMultiplier, r.SamplingRate, r.Steps, noiseKind(r.SecureNoise))
}

// PrintSummary prints r for the curator's terminal: the test accuracy, the
// ε spent by its accountant (or why none is finite), the noise, clipping,
// sampling and steps, a data normalisation's own noise and ε.
func (r *TrainReport) PrintSummary(w io.Writer) {
	if r.TestAccuracy != nil {
		fmt.Fprintf(w, "test accuracy  %.4f  (loss %.4f)\n", *r.TestAccuracy, *r.TestLoss)
	}
	if r.Private {
		if r.Epsilon != nil {
			fmt.Fprintf(w, "privacy        ε = %.4f, δ = %g  (%s)\n", *r.Epsilon, r.Delta, accounting.Describe(r.Accountant, r.RDPOrder))
		} else {
			fmt.Fprintf(w, "privacy        ε %s\n", r.EpsilonNote)
		}
		fmt.Fprintf(w, "noise          σ = %.4f, %s, q = %.6g, %d steps, %s\n", r.NoiseMultiplier, DescribeClipping(r.Clipping, r.ClipNorm, r.AutoClipGamma), r.SamplingRate, r.Steps, noiseKind(r.SecureNoise))
		if r.NormNoiseMultiplier > 0 {
			share := "ε unbounded"
			if r.NormEpsilon != nil {
				share = fmt.Sprintf("ε = %.4f of it alone", *r.NormEpsilon)
			}
			fmt.Fprintf(w, "normalisation  σ = %g (Gaussian mean and variance, q = 1), %s\n", r.NormNoiseMultiplier, share)
		}
	} else {
		fmt.Fprintf(w, "privacy        none (non-private training), %d steps\n", r.Steps)
	}
}

// PrintSummary prints the answer r, marking what was computed: σ, q, the
// steps (and whether the search stopped at dpsgd.MaxSteps), a tuning's
// number of runs and one run's ε, Xiang et al.'s μ, and ε by its
// accountant beside Papernot & Steinke's generic bound.
func (r AccountResult) PrintSummary(w io.Writer) {
	mark := func(field string) string {
		if r.Solved == field {
			return "  ← computed"
		}
		return ""
	}
	fmt.Fprintf(w, "noise multiplier σ  %.6g%s\n", r.NoiseMultiplier, mark("noise_multiplier"))
	fmt.Fprintf(w, "sampling rate q     %.6g\n", r.SamplingRate)
	capped := ""
	if r.StepsCapped {
		capped = fmt.Sprintf("  (the search stopped at its cap of %d steps: at least this many fit)", dpsgd.MaxSteps)
	}
	fmt.Fprintf(w, "steps               %d%s%s\n", r.Steps, mark("steps"), capped)
	if t := r.Tuning; t != nil {
		fmt.Fprintf(w, "tuning runs K       %s, E[K] = %.4g\n", t.Repetitions, t.MeanRuns)
		if t.MaxRatio > 0 {
			fmt.Fprintf(w, "adaptive (DP-HyPO)  densities within [%g, %g] × the prior\n", t.MinRatio, t.MaxRatio)
		}
		fmt.Fprintf(w, "one run alone       ε = %s\n", fmtEpsilon(t.BaseEpsilon))
	}
	what := "ε"
	if r.Tuning != nil {
		what = "ε of tuning"
	}
	if r.Mu > 0 {
		fmt.Fprintf(w, "reduced game μ      %.6g\n", r.Mu)
	}
	fmt.Fprintf(w, "%-19s %s at δ = %g  (%s)%s\n", what, fmtEpsilon(r.Epsilon), r.Delta, accounting.Describe(r.Accountant, r.Order), mark("epsilon"))
	if r.GenericEpsilon != nil {
		fmt.Fprintf(w, "Papernot–Steinke   ε = %s (the generic bound, for comparison)\n", fmtEpsilon(r.GenericEpsilon))
	}
}

// PrintSummary prints the one-run audit's ε_L, for each guess count and in
// all, against each ε_U the run claims, and the run's test accuracy.
func (res *OneRunResult) PrintSummary(out io.Writer) {
	fmt.Fprintf(out, "ε_L = %.4f  (%g%% confidence, δ = %g, one run, %d %s canaries)\n", res.EpsilonLower, 100*res.Confidence, res.Delta, res.Canaries, res.Canary)
	for _, g := range res.Guesses {
		fmt.Fprintf(out, "  %5d guesses, %5d right: ε_L %.4f\n", g.Guesses, g.Correct, g.EpsilonLower)
	}
	for name, v := range res.EpsilonUpper {
		verdict := "holds"
		if res.EpsilonLower > v {
			verdict = "VIOLATED: the claim is below the audit's lower bound"
		}
		fmt.Fprintf(out, "ε_U %-8s %.4f  %s\n", name, v, verdict)
	}
	if a := res.Run.TestAccuracy; a != nil {
		fmt.Fprintf(out, "test accuracy  %.2f%% (without the canaries)\n", 100**a)
	}
}

// printComponents prints a tuning's ε components, when it has more than
// one.
func printComponents(w io.Writer, cs []tuning.EpsilonComponent) {
	if len(cs) < 2 {
		return
	}
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s ε = %s", c.Name, fmtEpsilon(c.Epsilon)))
	}
	fmt.Fprintf(w, "               each alone at δ: %s (they compose, under RDP, to the total above)\n", strings.Join(parts, ", "))
}

// fmtEpsilon prints ε in nats: four decimals, or six significant digits
// when huge; +Inf when unbounded (nil).
func fmtEpsilon(eps *float64) string {
	switch {
	case eps == nil:
		return "+Inf"
	case *eps >= 1e6:
		return fmt.Sprintf("%.6g", *eps)
	}
	return fmt.Sprintf("%.4f", *eps)
}

// noiseKind describes the noise mode for people.
func noiseKind(secure bool) string {
	if secure {
		return "secure noise"
	}
	return "fast noise (seeded: reproducible, not secure)"
}

// DescribeClipping says how a run clips, for people: "C = 0.1", or
// "automatic clipping (γ = 0.01)" for clipping "automatic".
func DescribeClipping(clipping string, clipNorm, gamma float64) string {
	if clipping == "automatic" {
		return fmt.Sprintf("automatic clipping (γ = %g)", gamma)
	}
	return fmt.Sprintf("C = %g", clipNorm)
}
