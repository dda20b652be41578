package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/dpsgd/accounting"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// Default learning rates and momenta of dptune train, chosen by the sweep in
// README.md: DP-SGD with C = 1 takes plain SGD at η = 0.5; non-private
// training (unclipped gradients, no noise) takes η = 0.02 with momentum 0.9.
const (
	DefaultLearningRate           = 0.5
	DefaultMomentum               = 0.0
	DefaultNonPrivateLearningRate = 0.02
	DefaultNonPrivateMomentum     = 0.9
)

type trainFlags struct {
	data                            dataFlags
	out, accountant                 string
	epsilon, delta, noiseMultiplier float64
	clipNorm, lr, momentum          float64
	batchSize, epochs               int
	seed                            uint64
	nonPrivate                      bool
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

The sampling rate is --batch-size over the training set's nominal size (the
dataset's published size, or --nominal-size for data of your own), never over
a count of the private data. Without --seed the noise is drawn in secure mode
(resistant to floating-point attacks); a seeded run is reproducible and says
it is not secure.`,
		Example: `  dptune train --dataset mnist --epsilon 3 --delta 1e-5 --epochs 10 --out out/mnist
  dptune train --dataset cifar10 --data-dir ../shared/data/cifar10-jpeg-derived --epsilon 3 --out out/cifar
  dptune budget init mnist.budget --epsilon 4 --delta 1e-5 --dataset mnist
  dptune train --budget mnist.budget --epsilon 1 --out out/run1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runTrain(cmd.Context(), cmd, f)
		},
	}
	fl := cmd.Flags()
	addDataFlags(fl, &f.data)
	fl.Float64Var(&f.epsilon, "epsilon", 3, "target ε in nats of the whole run; the noise multiplier is calibrated to meet it")
	fl.Float64Var(&f.delta, "delta", 1e-5, "target δ")
	fl.Float64Var(&f.noiseMultiplier, "noise-multiplier", 0, "noise multiplier σ, instead of calibrating it from --epsilon")
	fl.Float64Var(&f.clipNorm, "clip-norm", 1, "per-example clipping norm C")
	fl.IntVar(&f.batchSize, "batch-size", 256, "expected batch size qN (Poisson sampling rate q = batch size / nominal N)")
	fl.IntVar(&f.epochs, "epochs", 10, "epochs; one epoch is ⌈N / batch size⌉ steps")
	fl.Float64Var(&f.lr, "lr", DefaultLearningRate, fmt.Sprintf("learning rate η (with --non-private the default is %g)", DefaultNonPrivateLearningRate))
	fl.Float64Var(&f.momentum, "momentum", DefaultMomentum, fmt.Sprintf("SGD momentum μ (with --non-private the default is %g)", DefaultNonPrivateMomentum))
	fl.Uint64Var(&f.seed, "seed", 0, "seed for initialisation, sampling and noise (default: fresh randomness from crypto/rand)")
	fl.StringVar(&f.out, "out", "out/train", "directory for the model and report.json")
	fl.BoolVar(&f.nonPrivate, "non-private", false, "train with plain SGD: no clipping, no noise, no privacy guarantee")
	fl.StringVar(&f.accountant, "accountant", "rdp", "privacy accountant: rdp or pld (tighter, slower)")
	return cmd
}

// report is what dptune train writes to DIR/report.json.
type report struct {
	Dataset         string            `json:"dataset"`
	NominalSize     int               `json:"nominal_size"` // the public training-set size q is computed from
	Private         bool              `json:"private"`
	Epsilon         *float64          `json:"epsilon"` // null when not private or unbounded
	EpsilonNote     string            `json:"epsilon_note,omitempty"`
	Delta           float64           `json:"delta"`
	Accountant      string            `json:"accountant"`
	RDPOrder        float64           `json:"rdp_order,omitempty"`
	NoiseMultiplier float64           `json:"noise_multiplier"`
	ClipNorm        float64           `json:"clip_norm"`
	SamplingRate    float64           `json:"sampling_rate"`
	BatchSize       int               `json:"batch_size"`
	MeanBatchSize   float64           `json:"-"` // realised: a count of the private data, curator's terminal only
	Steps           int               `json:"steps"`
	PlannedSteps    int               `json:"planned_steps"`
	Epochs          float64           `json:"epochs"`
	LearningRate    float64           `json:"learning_rate"`
	Momentum        float64           `json:"momentum"`
	Seeded          bool              `json:"seeded"` // the seed itself is never written: it would undo the guarantee
	SecureNoise     bool              `json:"secure_noise"`
	TestAccuracy    *float64          `json:"test_accuracy"`
	TestLoss        *float64          `json:"test_loss"`
	WallSeconds     float64           `json:"-"` // grows with the realised batches: curator's terminal only
	Interrupted     bool              `json:"interrupted"`
	Ledger          accounting.Ledger `json:"ledger"`
}

// validate checks every flag that can be checked before loading data.
func (f *trainFlags) validate(cmd *cobra.Command, trainN int) error {
	switch {
	case f.batchSize < 1:
		return usagef("--batch-size %d must be at least 1", f.batchSize)
	case f.batchSize > trainN:
		return usagef("--batch-size %d exceeds the %d training examples of %s", f.batchSize, trainN, f.data.dataset)
	case f.epochs < 1:
		return usagef("--epochs %d must be at least 1", f.epochs)
	case !(f.lr > 0) || math.IsInf(f.lr, 1):
		return usagef("--lr %v must be positive and finite", f.lr)
	case !(f.momentum >= 0 && f.momentum < 1):
		return usagef("--momentum %v is outside [0, 1)", f.momentum)
	}
	if f.nonPrivate {
		for _, name := range []string{"epsilon", "noise-multiplier", "clip-norm"} {
			if cmd.Flags().Changed(name) {
				return usagef("--non-private takes no --%s", name)
			}
		}
		return nil
	}
	if err := accounting.CheckDelta(f.delta); err != nil {
		return usagef("--delta: %v", err)
	}
	if !(f.clipNorm > 0) || math.IsInf(f.clipNorm, 1) {
		return usagef("--clip-norm %v must be positive and finite", f.clipNorm)
	}
	if cmd.Flags().Changed("noise-multiplier") {
		if cmd.Flags().Changed("epsilon") {
			return usagef("give --epsilon or --noise-multiplier, not both")
		}
		if !(f.noiseMultiplier > 0) || math.IsInf(f.noiseMultiplier, 1) {
			return usagef("--noise-multiplier %v must be positive and finite", f.noiseMultiplier)
		}
		return nil
	}
	if err := accounting.CheckEpsilon(f.epsilon); err != nil {
		return usagef("--epsilon: %v", err)
	}
	return nil
}

func runTrain(ctx context.Context, cmd *cobra.Command, f trainFlags) error {
	start := time.Now()
	ds, err := lookupDataset(f.data.dataset)
	if err != nil {
		return err
	}
	acc, err := accountantByName(f.accountant, false)
	if err != nil {
		return err
	}
	if f.nonPrivate && !cmd.Flags().Changed("lr") {
		f.lr = DefaultNonPrivateLearningRate
	}
	if f.nonPrivate && !cmd.Flags().Changed("momentum") {
		f.momentum = DefaultNonPrivateMomentum
	}
	if err := f.validate(cmd, ds.trainN); err != nil {
		return err
	}
	if err := f.data.checkBudgetUnseeded(cmd); err != nil {
		return err
	}
	nominal, err := f.data.nominal(cmd, ds)
	if err != nil {
		return err
	}
	if f.batchSize > nominal {
		return usagef("--batch-size %d exceeds the nominal %d training examples", f.batchSize, nominal)
	}
	q := float64(f.batchSize) / float64(nominal)
	if err := dpsgd.CheckEpochs(f.epochs, q); err != nil {
		return usagef("--epochs %d: %v", f.epochs, err)
	}
	steps := dpsgd.StepsForEpochs(f.epochs, q)
	if err := checkWritable(f.out); err != nil {
		return err
	}
	cfg := dpsgd.Config{SamplingRate: q, ExpectedBatchSize: float64(f.batchSize), Steps: steps, LearningRate: f.lr, Momentum: f.momentum, NonPrivate: f.nonPrivate}
	if cmd.Flags().Changed("seed") {
		cfg.Seed = &f.seed
	}
	// The noise is calibrated, and the budget charged with the run's worst
	// case, before the data is read when that is quick (RDP); the slower
	// PLD calibration waits until the data has been read and checked.
	calibrated := f.nonPrivate || cmd.Flags().Changed("noise-multiplier")
	var res *charge
	prepare := func() error {
		if !calibrated {
			sigma, err := accounting.CalibrateNoise(ctx, acc, func(s float64) accounting.Event { return accounting.DPSGD(s, q, steps) }, f.epsilon, f.delta)
			if err != nil {
				if errors.Is(err, context.Canceled) {
					return err
				}
				return usageError{err}
			}
			cfg.NoiseMultiplier, calibrated = sigma, true
		}
		var worst accounting.Ledger
		worst.Add("dpsgd training", dpsgd.PlannedEvent(cfg))
		res, err = reserve(f.data.budget, f.data.dataset, "train", fmt.Sprintf("dptune train → %s", f.out), worst)
		return err
	}
	if !f.nonPrivate {
		cfg.ClipNorm, cfg.NoiseMultiplier = f.clipNorm, f.noiseMultiplier
	}
	if _, isRDP := acc.(accounting.RDP); isRDP || calibrated {
		if err := prepare(); err != nil {
			return err
		}
	}
	w := cmd.ErrOrStderr()
	train, test, err := loadDataset(w, f.data.dataset, ds, f.data.dataDir, nominal)
	if err != nil {
		return res.done(accounting.Ledger{}, err)
	}
	if res == nil && f.data.budget != "" || !calibrated {
		if err := prepare(); err != nil {
			return err
		}
	}
	net, err := model.New(ds.arch, randsrc.New(cfg.Seed, "init"))
	if err != nil {
		return res.done(accounting.Ledger{}, err)
	}
	if f.nonPrivate {
		fmt.Fprintf(w, "training %s non-privately: %d steps (%d epochs), expected batch %d, lr %g\n", f.data.dataset, steps, f.epochs, f.batchSize, f.lr)
	} else {
		fmt.Fprintf(w, "training %s with DP-SGD: σ = %.4f, C = %g, q = %.6g, %d steps (%d epochs), lr %g\n",
			f.data.dataset, cfg.NoiseMultiplier, cfg.ClipNorm, q, steps, f.epochs, f.lr)
	}
	warnSeeded(w, cfg.Seed)

	run, trainErr := dpsgd.Train(ctx, net, train, cfg, nil, epochProgress(w, f, acc, cfg, steps))
	var ledger accounting.Ledger
	ledger.Add("dpsgd training", run.Event)
	interrupted := errors.Is(trainErr, context.Canceled)
	if trainErr != nil && !interrupted {
		// The steps taken touched the data: their ledger is written anyway.
		failed := failedTrain{Failed: trainErr.Error(), Steps: run.Steps, Ledger: ledger}
		if err := saveRelease(f.out, "failed-report.json", nil, nil, ledger, failed); err != nil {
			return res.done(ledger, errors.Join(trainErr, err))
		}
		return res.done(ledger, fmt.Errorf("%w (nothing released; the ledger is in %s/failed-report.json)", trainErr, f.out))
	}
	rep := report{Dataset: f.data.dataset, NominalSize: nominal, Private: !f.nonPrivate, Delta: f.delta, Accountant: acc.Name(),
		NoiseMultiplier: cfg.NoiseMultiplier, ClipNorm: cfg.ClipNorm, SamplingRate: q, BatchSize: f.batchSize,
		MeanBatchSize: run.MeanBatchSize, Steps: run.Steps, PlannedSteps: steps,
		Epochs: float64(run.Steps) / float64(steps/f.epochs), LearningRate: f.lr, Momentum: f.momentum, Seeded: cfg.Seed != nil,
		SecureNoise: run.SecureNoise, Interrupted: interrupted, Ledger: ledger}
	if !f.nonPrivate {
		g, err := ledger.Spent(acc, f.delta)
		rep.Epsilon, rep.RDPOrder, rep.EpsilonNote = finiteEpsilon(g, err)
	} else {
		rep.Delta, rep.Accountant = 0, ""
	}
	if !interrupted {
		m, err := dpsgd.Evaluate(ctx, net, test.X, test.Y)
		interrupted = errors.Is(err, context.Canceled)
		if err != nil && !interrupted {
			return res.done(ledger, err)
		}
		if err == nil {
			rep.TestAccuracy, rep.TestLoss = &m.Accuracy, &m.Loss
		}
	}
	rep.Interrupted = interrupted
	rep.WallSeconds = time.Since(start).Seconds()
	if err := saveRun(f.out, net, rep); err != nil {
		return res.done(ledger, err)
	}
	printSummary(cmd.OutOrStdout(), rep)
	fmt.Fprintf(w, "batches        mean realised size %.1f (curator-side: it counts the private data, so it is not in the report)\n", rep.MeanBatchSize)
	if interrupted {
		return res.done(ledger, fmt.Errorf("interrupted after %d of %d steps; the model so far and its report are in %s: %w", run.Steps, steps, f.out, context.Canceled))
	}
	return res.done(ledger, nil)
}

// failedTrain is failed-report.json of a training run that failed after
// touching the data: nothing is released but what it spent.
type failedTrain struct {
	Failed string            `json:"failed"`
	Steps  int               `json:"steps_done"`
	Ledger accounting.Ledger `json:"ledger"`
}

// finiteEpsilon returns g's ε for a report, or nil and a note when the
// accountant could not bound it: JSON has no +Inf, and a report is always
// written.
func finiteEpsilon(g accounting.Guarantee, err error) (eps *float64, order float64, note string) {
	switch {
	case err != nil:
		return nil, 0, "no ε: " + err.Error()
	case math.IsInf(g.Epsilon, 1):
		return nil, 0, fmt.Sprintf("unbounded: the %s accountant finds no finite ε at this δ (too little noise)", g.Accountant)
	}
	return &g.Epsilon, g.Order, ""
}

// epochProgress returns a Train progress callback that shows one progress
// bar per epoch, with ETA, the ε spent before the epoch and the epoch's mean
// training loss so far (the loss is a curator-side diagnostic).
func epochProgress(w io.Writer, f trainFlags, acc accounting.Accountant, cfg dpsgd.Config, steps int) func(dpsgd.Progress) {
	perEpoch := steps / f.epochs
	var bar *progressbar.ProgressBar
	var prefix string
	var lossSum float64
	var n int
	return func(p dpsgd.Progress) {
		if (p.Step-1)%perEpoch == 0 {
			prefix = fmt.Sprintf("epoch %d/%d", (p.Step-1)/perEpoch+1, f.epochs)
			if !cfg.NonPrivate {
				g, err := acc.Epsilon(accounting.DPSGD(cfg.NoiseMultiplier, cfg.SamplingRate, p.Step-1), f.delta)
				if err == nil {
					prefix += fmt.Sprintf("  ε %.3f", g.Epsilon)
				}
			}
			bar = progressbar.NewOptions(perEpoch, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(prefix),
				progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(25),
				progressbar.OptionThrottle(500*time.Millisecond), progressbar.OptionShowElapsedTimeOnFinish(),
				progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }))
			lossSum, n = 0, 0
		}
		lossSum += p.Loss
		n++
		bar.Describe(fmt.Sprintf("%s  loss %.3f", prefix, lossSum/float64(n)))
		bar.Add(1)
	}
}

// saveRun writes the model (with its hyperparameters and ledger) and report.json to dir.
func saveRun(dir string, net *model.Net, rep report) error {
	hyper, err := json.Marshal(map[string]any{"noise_multiplier": rep.NoiseMultiplier, "clip_norm": rep.ClipNorm,
		"sampling_rate": rep.SamplingRate, "steps": rep.Steps, "learning_rate": rep.LearningRate,
		"momentum": rep.Momentum, "private": rep.Private})
	if err != nil {
		return err
	}
	ledger, err := json.Marshal(rep.Ledger)
	if err != nil {
		return err
	}
	if err := net.Save(dir, model.Metadata{Hyperparameters: hyper, Ledger: ledger}); err != nil {
		return err
	}
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "report.json"), append(js, '\n'), 0o644)
}

func printSummary(w io.Writer, r report) {
	if r.TestAccuracy != nil {
		fmt.Fprintf(w, "test accuracy  %.4f  (loss %.4f)\n", *r.TestAccuracy, *r.TestLoss)
	}
	if r.Private {
		if r.Epsilon != nil {
			fmt.Fprintf(w, "privacy        ε = %.4f, δ = %g  (%s)\n", *r.Epsilon, r.Delta, describeAccountant(r.Accountant, r.RDPOrder))
		} else {
			fmt.Fprintf(w, "privacy        ε %s\n", r.EpsilonNote)
		}
		fmt.Fprintf(w, "noise          σ = %.4f, C = %g, q = %.6g, %d steps, %s\n", r.NoiseMultiplier, r.ClipNorm, r.SamplingRate, r.Steps,
			map[bool]string{true: "secure noise", false: "fast noise (seeded: reproducible, not secure)"}[r.SecureNoise])
	} else {
		fmt.Fprintf(w, "privacy        none (non-private training), %d steps\n", r.Steps)
	}
	fmt.Fprintf(w, "wall time      %.1f s (curator-side, not in the report)\n", r.WallSeconds)
}
