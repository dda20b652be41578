// Command dptune trains differentially private image classifiers with
// DP-SGD, tunes their hyperparameters privately, and reports one privacy
// budget for the whole pipeline.
//
//	dptune train   --dataset mnist --epsilon 3 --delta 1e-5 --out out/mnist
//	dptune eval    --model out/mnist --dataset mnist
//	dptune tune    --tuner randomstop|gp|doubling --epsilon 8 --out out/tune
//	dptune account --noise-multiplier 1.1 --sampling-rate 0.0042667 --steps 14063
//	dptune bench   persample|tuners|doubling
//	dptune budget  init FILE --epsilon 4 --delta 1e-5 --dataset mnist | show FILE
//	dptune audit   reduced|dpsgd|tuner|score|above-threshold --trials N --out DIR
//
// Exit status: 0 on success, 1 when the work failed (unreadable data, a
// failed write), 2 for an impossible request (bad flag, ε ≤ 0, δ ∉ (0, 1),
// a batch larger than the dataset, a named file that is a FIFO or a device
// or over its size bound, …) reported before any work starts, and
// 130 when interrupted (Ctrl-C), after saving what was finished. A second
// Ctrl-C (or SIGTERM) exits at once with status 130, saving nothing more.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/internal/gemm"
	"github.com/dptune/dptune/job"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usageError marks an impossible request: exit status 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "dptune",
		Short:         "Differentially private training (DP-SGD) and tuning with honest privacy accounting",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	addProfileFlag(root)
	root.AddCommand(newTrainCmd(), newEvalCmd(), newPredictCmd(), newExportCmd(), newAccountCmd(), newBenchCmd(), newTuneCmd(), newBudgetCmd(), newAuditCmd(), newVoteCmd(), newWorkerCmd(), newGenDocsCmd())
	return root
}

func main() {
	setMemoryLimit()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx := interruptible(context.Background(), sigs, os.Stderr, os.Exit)
	if err := gemm.EnvError(); err != nil {
		fmt.Fprintf(os.Stderr, "dptune: %v\n", err)
		os.Exit(2)
	}
	err := newRoot().ExecuteContext(ctx)
	stopProfile()
	if err == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "dptune: %v\n", err)
	os.Exit(exitCode(err))
}

// interruptible returns a context cancelled by the first signal on sigs;
// the second calls exit(130) at once, whatever the work is doing (a
// command stuck where it cannot see ctx still ends).
func interruptible(parent context.Context, sigs <-chan os.Signal, w io.Writer, exit func(int)) context.Context {
	ctx, cancel := context.WithCancel(parent)
	go func() {
		<-sigs
		fmt.Fprintln(w, "dptune: interrupted: saving what is finished (interrupt again to exit at once)")
		cancel()
		<-sigs
		fmt.Fprintln(w, "dptune: interrupted twice: exiting now")
		exit(130)
	}()
	return ctx
}

// exitCode maps an error to the exit status documented above.
func exitCode(err error) int {
	var u usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &u), errors.Is(err, job.ErrInvalid), errors.Is(err, fsx.ErrNotRegular), errors.Is(err, fsx.ErrTooLarge):
		return 2
	case errors.Is(err, context.Canceled):
		return 130
	}
	return 1
}

// given is the set of cmd's flags given on the command line, by name.
func given(cmd *cobra.Command) job.Given {
	g := job.Given{}
	cmd.Flags().Visit(func(f *pflag.Flag) { g[f.Name] = true })
	return g
}
