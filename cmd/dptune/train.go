package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// trainFlags are train's flags (and audit one-run's): the request, the
// data and the release directory.
type trainFlags struct {
	job.TrainRequest
	data dataFlags
	out  string
}

func newTrainCmd() *cobra.Command {
	var f trainFlags
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train the CNN with DP-SGD and report test accuracy and the privacy spent",
		Long: `Train the CNN with DP-SGD (Poisson sampling, per-example clipping, Gaussian
noise) and report its test accuracy and the (ε, δ) it spent. The noise
multiplier is calibrated so that the whole run meets --epsilon at --delta,
unless --noise-multiplier is given. Writes the model and report.json to --out.

The built-in ScatterNet networks (--model scatter-linear-mnist,
scatter-cnn-mnist, scatter-linear-cifar10, scatter-cnn-cifar10) carry their
own settings, used for every one of
--batch-size, --epochs, --lr, --momentum and --clip-norm not given; their
features are computed once per dataset and kept in --feature-cache.

--clipping automatic replaces per-example clipping to --clip-norm by
automatic clipping (Bu et al. 2023, AUTO-S): each example's gradient g
becomes g/(‖g‖ + γ), γ = --auto-clip-gamma, so every one has norm below 1
and the noise is σ·1 — the same σ and ε as flat clipping at C = 1, and no
clipping norm to choose. It takes no --clip-norm. With every gradient
clipped it steps as flat clipping at C with learning rate η/C, so a
network's own learning rate η at C becomes η·C when --lr is not given.

The sampling rate is --batch-size over the training set's nominal size (the
dataset's published size, or --nominal-size for data of your own), never over
a count of the private data. Without --seed the noise is drawn in secure mode
(resistant to floating-point attacks); a seeded run is reproducible and says
it is not secure.

An interrupted run (Ctrl-C) saves the model so far, and its report states
the ε of the whole planned run, which is what --budget is charged: the
training loss shown while it runs is not private, and the decision to stop
may have followed it.

After every epoch the run writes a checkpoint to OUT-curator/checkpoint,
beside --out and never in it (parameters, optimiser state, the seeded
streams, the settings, a digest of the data), authenticated under the
curator's key (~/.config/dptune/checkpoint.key, or $DPTUNE_CHECKPOINT_KEY):
a run that was killed, even with SIGKILL, or that failed continues with
--resume OUT and loses at most one epoch. A seeded run ends bit for bit as
it would have. An unseeded resume re-runs the steps after the checkpoint
with fresh noise: the killed run stays charged at its worst case, the
resume charges the steps it runs, and the release states both. An edited
checkpoint, other data, or a second process on the same checkpoint is
refused before any work; the checkpoint is removed when the run finishes.`,
		Example: `  dptune train --dataset mnist --epsilon 3 --delta 1e-5 --epochs 10 --out out/mnist
  dptune train --dataset cifar10 --data-dir data/cifar-10-batches-bin --epsilon 3 --out out/cifar
  dptune budget init mnist.budget --epsilon 4 --delta 1e-5 --dataset mnist
  dptune train --budget mnist.budget --epsilon 1 --out out/run1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTrain(cmd.Context(), cmd, f)
		},
	}
	f.add(cmd.Flags())
	cmd.Flags().StringVar(&f.out, "out", "out/train", "directory for the model and report.json")
	cmd.Flags().StringVar(&f.Resume, "resume", "", "continue the unfinished run whose --out was DIR from its checkpoint (DIR-curator/checkpoint, written after every epoch), with the settings it kept; takes no other flag")
	return cmd
}

// add registers train's flags on fl.
func (f *trainFlags) add(fl *pflag.FlagSet) {
	addDataFlags(fl, &f.data)
	fl.Float64Var(&f.Epsilon, "epsilon", 3, "target ε in nats of the whole run; the noise multiplier is calibrated to meet it")
	fl.Float64Var(&f.Delta, "delta", 1e-5, "target δ")
	fl.Float64Var(&f.NoiseMultiplier, "noise-multiplier", 0, "noise multiplier σ, instead of calibrating it from --epsilon")
	fl.Float64Var(&f.ClipNorm, "clip-norm", 1, "per-example clipping norm C (flat clipping)")
	fl.StringVar(&f.Clipping.Rule, "clipping", "flat", "per-example clipping: flat (to --clip-norm) or automatic (g/(‖g‖ + γ): sensitivity 1, no clipping norm; Bu et al. 2023, AUTO-S)")
	fl.Float64Var(&f.Clipping.Gamma, "auto-clip-gamma", dpsgd.DefaultAutoClipGamma, "stability constant γ > 0 of --clipping automatic")
	fl.IntVar(&f.BatchSize, "batch-size", 256, "expected batch size qN (Poisson sampling rate q = batch size / nominal N)")
	fl.IntVar(&f.Epochs, "epochs", 10, "epochs; one epoch is ⌈N / batch size⌉ steps")
	fl.Float64Var(&f.LearningRate, "lr", job.DefaultLearningRate, fmt.Sprintf("learning rate η (with --non-private the default is %g)", job.DefaultNonPrivateLearningRate))
	fl.Float64Var(&f.Momentum, "momentum", job.DefaultMomentum, fmt.Sprintf("SGD momentum μ (with --non-private the default is %g)", job.DefaultNonPrivateMomentum))
	fl.StringVar(&f.Schedule, "lr-schedule", "constant", "learning-rate schedule: constant, or cosine (η decays to 0 along half a cosine over the run)")
	fl.Float64Var(&f.EMADecay, "ema-decay", 0, "if positive (e.g. 0.999), the released model is the exponential moving average of the iterates with this decay (post-processing: no privacy cost)")
	fl.Uint64Var(&f.Seed, "seed", 0, "seed for initialisation, sampling and noise (default: fresh randomness from crypto/rand)")
	fl.BoolVar(&f.NonPrivate, "non-private", false, "train with plain SGD: no clipping, no noise, no privacy guarantee")
	fl.StringVar(&f.Accountant, "accountant", "rdp", "privacy accountant: "+accounting.Help(false))
}

// spec is the TrainSpec the flags ask for, labelled label in the budget
// file, with notes, progress and warnings going to cmd's stderr.
func (f *trainFlags) spec(cmd *cobra.Command, label string) (job.TrainSpec, error) {
	w := cmd.ErrOrStderr()
	f.Given, f.Budget, f.Label = given(cmd), f.data.budget, label
	spec, err := f.Spec(func() (job.Source, error) { return f.data.source(cmd) }, func(note string) { fmt.Fprintln(w, note) })
	if err != nil {
		return spec, err
	}
	spec.Warn = warner(w)
	spec.Progress = epochProgress(w, f.NonPrivate)
	spec.Started = func(c dpsgd.Config) {
		if f.NonPrivate {
			fmt.Fprintf(w, "training %s non-privately: %d steps (%d epochs), expected batch %d, lr %g\n", f.data.dataset, c.Steps, f.Epochs, f.BatchSize, f.LearningRate)
		} else {
			fmt.Fprintf(w, "training %s with DP-SGD: σ = %.4f, %s, q = %.6g, %d steps (%d epochs), lr %g\n",
				f.data.dataset, c.NoiseMultiplier, job.DescribeClipping(c.Clipping.String(), c.ClipNorm, c.AutoClipGamma), c.SamplingRate, c.Steps, f.Epochs, f.LearningRate)
		}
		if c.Seed != nil {
			warnSeeded(w)
		}
	}
	return spec, nil
}

func runTrain(ctx context.Context, cmd *cobra.Command, f trainFlags) error {
	var rel *job.Release
	var diag *job.NotPrivateDiagnostics
	var err error
	w := cmd.ErrOrStderr()
	if f.Resume != "" {
		f.Given = given(cmd)
		if err := f.CheckResume(); err != nil {
			return err
		}
		f.out = f.Resume
		fmt.Fprintf(w, "resuming the run in %s from its last checkpoint\n", f.out)
		rel, diag, err = job.ResumeTrain(ctx, f.out, job.TrainHooks{Progress: epochProgress(w, false), Warn: warner(w), Started: func(c dpsgd.Config) {
			fmt.Fprintf(w, "σ = %.4f, %s, q = %.6g, %d steps\n", c.NoiseMultiplier, job.DescribeClipping(c.Clipping.String(), c.ClipNorm, c.AutoClipGamma), c.SamplingRate, c.Steps)
		}})
	} else {
		spec, serr := f.spec(cmd, "dptune train → "+f.out)
		if serr != nil {
			return serr
		}
		if err := job.CheckOutRoom(f.out, spec.Data); err != nil {
			return err
		}
		spec.Checkpoint = job.CheckpointPath(f.out)
		rel, diag, err = job.Train(ctx, spec)
	}
	if rel == nil {
		return err
	}
	saveErr := rel.Save(f.out)
	rep := rel.Report.(*job.TrainReport)
	if rel.Failed {
		if saveErr != nil {
			printCharge(w, f.data.budget, rep.Epsilon, rep.Delta)
			return errors.Join(err, fmt.Errorf("--out %s: failed-report.json could not be written: %w", f.out, saveErr))
		}
		return fmt.Errorf("%w (nothing released; the ledger is in %s/failed-report.json)", err, f.out)
	}
	rep.PrintSummary(cmd.OutOrStdout())
	fmt.Fprintf(cmd.OutOrStdout(), "wall time      %.1f s (curator-side, not in the report)\n", diag.WallSeconds)
	fmt.Fprintf(w, "batches        mean realised size %.1f (curator-side: it counts the private data, so it is not in the report)\n", diag.MeanBatchSize)
	if saveErr != nil {
		// The privacy is spent: the results above are all that is left.
		printCharge(w, f.data.budget, rep.Epsilon, rep.Delta)
		return errors.Join(err, fmt.Errorf("--out %s: the release could not be saved, and no partial file is left: %w", f.out, saveErr))
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w; the model so far and its report are in %s", err, f.out)
	}
	return err
}

// printCharge says, after a release could not be saved, that its privacy
// is spent all the same and where it is recorded.
func printCharge(w io.Writer, budgetFile string, eps *float64, delta float64) {
	spent := "this run's ε"
	if eps != nil {
		spent = fmt.Sprintf("ε = %.4f at δ = %g", *eps, delta)
	}
	if budgetFile != "" {
		fmt.Fprintf(w, "spent          %s, charged to %s (dptune budget show %s)\n", spent, budgetFile, budgetFile)
	} else {
		fmt.Fprintf(w, "spent          %s, although nothing was saved\n", spent)
	}
}

// epochProgress returns a job progress callback that shows one progress bar
// per epoch with its ETA, the ε spent before the epoch and the epoch's mean
// training loss so far (the loss is a curator-side diagnostic).
func epochProgress(w io.Writer, nonPrivate bool) func(job.TrainProgress) {
	var b *bar
	var prefix string
	var lossSum float64
	var n int
	return func(p job.TrainProgress) {
		if p.StepInEpoch == 1 || b == nil { // a resumed run starts mid-epoch
			prefix = fmt.Sprintf("epoch %d/%d", p.Epoch, p.Epochs)
			if !nonPrivate && p.EpsilonBefore != nil {
				prefix += fmt.Sprintf("  ε %.3f", *p.EpsilonBefore)
			}
			b = newBar(w, p.StepsPerEpoch, prefix)
			if p.StepInEpoch > 1 {
				b.Add(p.StepInEpoch - 1)
			}
			lossSum, n = 0, 0
		}
		lossSum += p.Loss
		n++
		b.Describe(fmt.Sprintf("%s  loss %.3f", prefix, lossSum/float64(n)))
		b.Add(1)
	}
}
