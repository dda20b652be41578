package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/job"
)

// oneRunFlags are audit one-run's flags: train's, and the canaries' (the
// spec's Canaries, Guesses, Confidence and Canary).
type oneRunFlags struct {
	train trainFlags
	job.OneRunSpec
}

func newAuditOneRunCmd() *cobra.Command {
	var o oneRunFlags
	f := &o.train
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
		RunE:    func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f.add(cmd.Flags())
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "out/audit-one-run", "directory for audit.json")
	fl.IntVar(&o.Canaries, "canaries", 1000, "canaries m (at most the test set's size, and for gradient canaries the network's parameter count)")
	fl.StringVar(&o.Canary, "canary", job.OneRunGradient, "canary kind: gradient (white-box) or input (black-box)")
	fl.IntSliceVar(&o.Guesses, "guesses", nil, "guess counts r to try, each in [1, m] (default: 2%, 5%, 10%, 20%, 50% and 100% of m)")
	fl.Float64Var(&o.Confidence, "confidence", 0.95, "confidence of ε_L, in (0, 1), split over the guess counts")
	return cmd
}

// run audits the run of the flags in one run, writes audit.json in --out
// and prints the bounds.
func (o *oneRunFlags) run(cmd *cobra.Command) error {
	f := &o.train
	if err := o.CheckRequest(f.data.dataset, f.NonPrivate); err != nil {
		return err
	}
	spec, err := f.spec(cmd, "dptune audit one-run → "+f.out)
	if err != nil {
		return err
	}
	if err := job.CheckOut(f.out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	start := time.Now()
	o.Train = spec
	res, err := job.AuditOneRun(cmd.Context(), o.OneRunSpec)
	if err != nil {
		return err
	}
	if err := res.Save(f.out); err != nil {
		return err
	}
	res.PrintSummary(cmd.OutOrStdout())
	fmt.Fprintf(cmd.ErrOrStderr(), "wall time      %.1f s; audit.json in %s\n", time.Since(start).Seconds(), f.out)
	return nil
}
