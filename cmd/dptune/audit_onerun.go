package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/job"
)

func newAuditOneRunCmd() *cobra.Command {
	var (
		f          trainFlags
		canaries   int
		guesses    []int
		confidence float64
		canary     string
	)
	cmd := &cobra.Command{
		Use:   "one-run",
		Short: "Audit one real training run (Steinke, Nasr & Jagielski 2023): ε_L from canaries",
		Long: `one-run audits a training run with train's flags in one run (Steinke, Nasr &
Jagielski 2023, "Privacy Auditing with One (1) Training Run"): --canaries
canaries are each added to the training set with probability 1/2; the run
trains once with your settings (calibration, budget file and ledger as train
has them); each canary is scored; the auditor guesses "in" for the highest
half of r guesses and "out" for the lowest, and ε_L follows from the number
right by their Theorem 3.1, for each r in --guesses (fixed in advance; the
confidence is split over them).

  --canary gradient  white-box (default): Dirac gradient canaries, each on its
                     own parameter, through DP-SGD's sampling, clipping and
                     noise; score: how far its parameter moved
  --canary input     black-box: test images with a random wrong label; score:
                     the final model's log-probability of that label

The canaries carry no private data and leave the test set, so audit.json (ε_L,
the guesses, the run's report) is post-processing of the run, covered by its
ledger. Expect ε_L below ε, far below for input canaries: one run gives the
auditor one release to look at.

Writes DIR/audit.json.`,
		Example: `  dptune audit one-run --dataset mnist --model scatter-linear-mnist --epsilon 3 --canaries 1000 --out out/audit-one-run`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !(confidence > 0 && confidence < 1) {
				return usagef("--confidence %v is outside (0, 1)", confidence)
			}
			if canaries < 2 {
				return usagef("--canaries %d: a one-run audit needs at least 2", canaries)
			}
			if canary != job.OneRunGradient && canary != job.OneRunInput {
				return usagef("--canary %q is neither %s nor %s", canary, job.OneRunGradient, job.OneRunInput)
			}
			if f.nonPrivate {
				return usagef("--non-private: a one-run audit audits a private run")
			}
			for _, r := range guesses {
				if r < 1 || r > canaries {
					return usagef("--guesses %d is outside [1, %d] (the canaries)", r, canaries)
				}
			}
			if n, ok := job.TestSize(f.data.dataset); ok && canaries > n {
				return usagef("--canaries %d is above %d, the size of %s's test set the canaries are drawn from", canaries, n, f.data.dataset)
			}
			spec, err := f.spec(cmd, "dptune audit one-run → "+f.out)
			if err != nil {
				return err
			}
			if err := job.CheckOut(f.out); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			start := time.Now()
			res, err := job.AuditOneRun(cmd.Context(), job.OneRunSpec{Train: spec, Canaries: canaries, Guesses: guesses, Confidence: confidence, Canary: canary})
			if err != nil {
				return err
			}
			js, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				return err
			}
			if err := fsx.WriteFileAtomic(filepath.Join(f.out, "audit.json"), append(js, '\n'), 0o644); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
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
			fmt.Fprintf(cmd.ErrOrStderr(), "wall time      %.1f s; audit.json in %s\n", time.Since(start).Seconds(), f.out)
			return nil
		},
	}
	f.add(cmd.Flags())
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "out/audit-one-run", "directory for audit.json")
	fl.IntVar(&canaries, "canaries", 1000, "canaries m (at most the test set's size, and for gradient canaries the network's parameter count)")
	fl.StringVar(&canary, "canary", job.OneRunGradient, "canary kind: gradient (white-box) or input (black-box)")
	fl.IntSliceVar(&guesses, "guesses", nil, "guess counts r to try, each in [1, m] (default: 2%, 5%, 10%, 20%, 50% and 100% of m)")
	fl.Float64Var(&confidence, "confidence", 0.95, "confidence of ε_L, in (0, 1), split over the guess counts")
	return cmd
}
