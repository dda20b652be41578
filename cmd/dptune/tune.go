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

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/dpsgd/accounting"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

type tuneFlags struct {
	tuner, dataset, dataDir, space, runsDist, validation, out, diagnostics string
	epsilon, delta, eta, meanRuns, momentum, scoreNoise                    float64
	maxRatio, minRatio, tau, beta                                          float64
	epochs, batchSize, valSize                                             int
	seed                                                                   uint64
	doubling                                                               doublingFlags
}

func newTuneCmd() *cobra.Command {
	var f tuneFlags
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Choose learning rate and clipping norm privately, and release the best model",
		Long: `tune runs private hyperparameter tuning around full DP-SGD runs and releases
only the selected hyperparameters, the model trained with them, its score and
the ledger — never the number of runs or the other runs' scores.

  randomstop  K ~ TNB(η, γ) or Poisson(μ) runs on uniformly drawn candidates
              (Liu & Talwar 2019; Papernot & Steinke 2022)
  gp          DP-HyPO (Wang et al. 2023): candidates from a Gaussian-process
              UCB softmax kept within [c, C] × the uniform prior; K ~ TNB
  doubling    Ding et al.: every candidate trained on k disjoint parts, a
              capped doubling AboveThreshold search, one final DP-SGD run;
              --epsilon is the final run's, the search adds T_max·ϵ

--epsilon and --delta are the total budget of tuning and release together:
each run's noise multiplier is calibrated so the whole pipeline meets them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTune(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.tuner, "tuner", "randomstop", "randomstop, gp or doubling")
	fl.StringVar(&f.dataset, "dataset", "mnist", "mnist or cifar10")
	fl.StringVar(&f.dataDir, "data-dir", "", "directory of the dataset's files (default for mnist: the GoMNIST module)")
	fl.Float64Var(&f.epsilon, "epsilon", 8, "total ε of tuning and release")
	fl.Float64Var(&f.delta, "delta", 1e-5, "total δ")
	fl.StringVar(&f.space, "space", "", "search space: mnist-dphypo, cifar10-dphypo or a .json file (default: the dataset's)")
	fl.StringVar(&f.runsDist, "runs-dist", "", "distribution of the number of runs: tnb or poisson (default: poisson for randomstop, tnb for gp, which needs it)")
	fl.Float64Var(&f.eta, "eta", 1, "TNB shape η > −1 (1: geometric, 0: logarithmic)")
	fl.Float64Var(&f.meanRuns, "mean-runs", 20, "expected number of runs E[K]")
	fl.IntVar(&f.epochs, "epochs", 3, "epochs of each DP-SGD run")
	fl.IntVar(&f.batchSize, "batch-size", 256, "expected batch size of each run")
	fl.Float64Var(&f.momentum, "momentum", 0, "SGD momentum of each run")
	fl.IntVar(&f.valSize, "val-size", 5000, "validation examples held out of the training set for scoring")
	fl.StringVar(&f.validation, "validation", "private", "private (scores released with Gaussian noise, counted) or public (you declare the validation split public: not counted)")
	fl.Float64Var(&f.scoreNoise, "score-noise", 20, "noise multiplier of a private score: its noise std is this / val-size")
	fl.Float64Var(&f.maxRatio, "C", 2, "gp: upper density bound C (× the uniform prior)")
	fl.Float64Var(&f.minRatio, "c", 0.75, "gp: lower density bound c")
	fl.Float64Var(&f.tau, "tau", 0.1, "gp: UCB weight τ")
	fl.Float64Var(&f.beta, "beta", 1, "gp: softmax inverse temperature β")
	fl.Uint64Var(&f.seed, "seed", 0, "makes the tuning reproducible (default: crypto/rand)")
	fl.StringVar(&f.out, "out", "out/tune", "where the model and report.json go")
	fl.StringVar(&f.diagnostics, "diagnostics", "", "NOT PRIVATE: write every run's candidate and score to this file (the curator's eyes only)")
	addDoublingFlags(fl, &f.doubling)
	return cmd
}

// tuneReport is report.json: what the tuner released. It has no number of
// runs and no other run's score.
type tuneReport struct {
	Tuner               string                 `json:"tuner"`
	Dataset             string                 `json:"dataset"`
	Space               string                 `json:"space"`
	Selected            map[string]float64     `json:"selected"`
	ValidationScore     *float64               `json:"validation_score"`
	Validation          string                 `json:"validation"`
	TestAccuracy        *float64               `json:"test_accuracy"`
	Epsilon             float64                `json:"epsilon"`
	Delta               float64                `json:"delta"`
	Accountant          string                 `json:"accountant"`
	BaseNoiseMultiplier float64                `json:"base_noise_multiplier"`
	BaseEpsilon         float64                `json:"base_epsilon"`
	TuningOverhead      float64                `json:"tuning_overhead_epsilon"`
	Repetitions         accounting.Repetitions `json:"runs_distribution"`
	MeanRuns            float64                `json:"mean_runs"`
	Epochs              int                    `json:"epochs_per_run"`
	BatchSize           int                    `json:"batch_size"`
	SamplingRate        float64                `json:"sampling_rate"`
	Steps               int                    `json:"steps_per_run"`
	Seeded              bool                   `json:"seeded"` // the seed itself is never written: it would undo the guarantee
	Interrupted         bool                   `json:"interrupted"`
	Failed              string                 `json:"failed,omitempty"`
	Ledger              accounting.Ledger      `json:"ledger"`
}

func runTune(cmd *cobra.Command, f tuneFlags) error {
	start := time.Now()
	ds, err := lookupDataset(f.dataset)
	if err != nil {
		return err
	}
	if f.tuner == "doubling" {
		return runDoubling(cmd, f, ds, start)
	}
	plan, err := f.plan(cmd, ds)
	if err != nil {
		return err
	}
	w := cmd.ErrOrStderr()
	fmt.Fprintf(w, "tuning %s with %s over %s (%d candidates): each run %d epochs at σ = %.4f; total budget ε = %g, δ = %g\n",
		f.dataset, f.tuner, plan.space.Name, plan.space.Size(), f.epochs, plan.sigma, f.epsilon, f.delta)

	train, test, err := loadDataset(f.dataset, ds, f.dataDir)
	if err != nil {
		return err
	}
	if train.N != ds.trainN {
		return fmt.Errorf("%s: %d training examples, expected %d", f.dataset, train.N, ds.trainN)
	}
	var seed *uint64
	if cmd.Flags().Changed("seed") {
		seed = &f.seed
	}
	fit, val, err := keyedValidationSplit(train, f.valSize, seed)
	if err != nil {
		return usageError{err}
	}
	trainer := plan.trainer
	trainer.Data, trainer.Val = fit, val
	trainer.SamplingRate = float64(f.batchSize) / float64(fit.N)
	trainer.Steps = dpsgd.StepsForEpochs(f.epochs, trainer.SamplingRate)
	// Recalibrate with the split's actual sizes (the plan used nominal ones).
	var gpOpt *tuning.GPOptions
	if f.tuner == "gp" {
		gpOpt = &plan.gp
	}
	if plan.sigma, err = tuning.CalibrateBase(trainer.EventFor, plan.rep, gpOpt, f.epsilon, f.delta); err != nil {
		return usagef("ε = %g at δ = %g is too small for this tuning: %v", f.epsilon, f.delta, err)
	}
	trainer.NoiseMultiplier = plan.sigma
	warnSeeded(w, seed)

	// The bar shows the number of runs K: it is for the curator's eyes, on
	// the terminal, and never in the report.
	var bar *progressbar.ProgressBar
	progress := func(run, runs int) {
		if bar == nil {
			bar = progressbar.NewOptions(runs, progressbar.OptionSetWriter(w),
				progressbar.OptionSetDescription("tuning runs (curator-side, not private)"), progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(25), progressbar.OptionThrottle(time.Second),
				progressbar.OptionShowElapsedTimeOnFinish())
		}
		bar.Set(run - 1)
	}
	cfg := tuning.Config{Space: plan.space, Trainer: trainer, Repetitions: plan.rep, Seed: seed,
		Diagnostics: f.diagnostics != "", Progress: progress}
	ctx := cmd.Context()
	var res tuning.Result
	var tuneErr error
	if f.tuner == "gp" {
		res, tuneErr = tuning.GPTune(ctx, cfg, plan.gp)
	} else {
		res, tuneErr = tuning.RandomStop(ctx, cfg)
	}
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(w)
	}
	interrupted := errors.Is(tuneErr, context.Canceled)

	rep := tuneReport{Tuner: f.tuner, Dataset: f.dataset, Space: plan.space.Name, Validation: f.validation,
		Delta: f.delta, Accountant: "rdp", BaseNoiseMultiplier: plan.sigma, Repetitions: plan.rep, MeanRuns: plan.rep.Mean(),
		Epochs: f.epochs, BatchSize: f.batchSize, SamplingRate: trainer.SamplingRate, Steps: trainer.Steps, Seeded: seed != nil,
		Interrupted: interrupted, Ledger: res.Ledger}
	if tuneErr != nil && !interrupted {
		// The runs so far touched the data: the ledger is written anyway.
		rep.Failed = tuneErr.Error()
		if err := saveRelease(f.out, "failed-report.json", nil, nil, rep.Ledger, rep); err != nil {
			return err
		}
		return fmt.Errorf("%w (nothing released; the ledger is in %s/failed-report.json)", tuneErr, f.out)
	}
	if g, err := res.Ledger.Spent(accounting.RDP{}, f.delta); err == nil {
		rep.Epsilon = g.Epsilon
	} else {
		return err
	}
	if b, err := (accounting.RDP{}).Epsilon(trainer.Event(), f.delta); err == nil {
		rep.BaseEpsilon, rep.TuningOverhead = b.Epsilon, rep.Epsilon-b.Epsilon
	}
	if !interrupted && res.Selected != nil && res.Model != nil {
		rep.Selected = res.Selected.Values
		rep.ValidationScore = &res.Score
		m, err := dpsgd.Evaluate(ctx, res.Model, test.X, test.Y)
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		if err == nil {
			rep.TestAccuracy = &m.Accuracy
		}
	}
	var hyper map[string]any
	if rep.Selected != nil {
		hyper = map[string]any{"selected": rep.Selected, "noise_multiplier": rep.BaseNoiseMultiplier,
			"sampling_rate": rep.SamplingRate, "steps": rep.Steps, "tuner": rep.Tuner}
	}
	if err := saveRelease(f.out, "report.json", res.Model, hyper, rep.Ledger, rep); err != nil {
		return err
	}
	if f.diagnostics != "" {
		if err := writeDiagnostics(f.diagnostics, res.Diagnostics); err != nil {
			return err
		}
	}
	printTune(cmd.OutOrStdout(), rep)
	fmt.Fprintf(w, "wall time      %.1f s (curator-side: it grows with the number of runs, so it is not in the report)\n", time.Since(start).Seconds())
	if interrupted {
		return fmt.Errorf("interrupted: nothing released; the ledger in %s still counts the whole tuning budget: %w", f.out, context.Canceled)
	}
	return nil
}

// tunePlan is the validated request, with the calibrated base noise.
type tunePlan struct {
	space   tuning.Space
	rep     accounting.Repetitions
	gp      tuning.GPOptions
	trainer *tuning.DPSGDTrainer
	sigma   float64
}

// plan checks every flag and calibrates the base run's σ, all before any
// data is read.
func (f *tuneFlags) plan(cmd *cobra.Command, ds datasetInfo) (tunePlan, error) {
	var p tunePlan
	ch := cmd.Flags().Changed
	if f.tuner != "randomstop" && f.tuner != "gp" {
		return p, usagef("unknown --tuner %q (want randomstop, gp or doubling)", f.tuner)
	}
	for _, n := range doublingFlagNames {
		if ch(n) {
			return p, usagef("--%s is a --tuner doubling option", n)
		}
	}
	if err := accounting.CheckEpsilon(f.epsilon); err != nil {
		return p, usagef("--epsilon: %v", err)
	}
	if err := accounting.CheckDelta(f.delta); err != nil {
		return p, usagef("--delta: %v", err)
	}
	space, err := loadSpace(f.space, f.dataset)
	if err != nil {
		return p, usageError{err}
	}
	p.space = space
	switch {
	case f.epochs < 1:
		return p, usagef("--epochs %d must be at least 1", f.epochs)
	case f.valSize < 100 || f.valSize >= ds.trainN/2:
		return p, usagef("--val-size %d is outside [100, %d)", f.valSize, ds.trainN/2)
	case f.batchSize < 1 || f.batchSize > ds.trainN-f.valSize:
		return p, usagef("--batch-size %d is outside [1, %d]", f.batchSize, ds.trainN-f.valSize)
	case !(f.momentum >= 0 && f.momentum < 1):
		return p, usagef("--momentum %v is outside [0, 1)", f.momentum)
	case f.validation != "private" && f.validation != "public":
		return p, usagef("--validation %q: want private or public", f.validation)
	case f.validation == "private" && (!(f.scoreNoise > 0) || math.IsInf(f.scoreNoise, 1)):
		return p, usagef("--score-noise %v must be positive and finite", f.scoreNoise)
	case f.validation == "public" && ch("score-noise"):
		return p, usagef("--score-noise applies to --validation private only")
	}
	if f.runsDist == "" {
		f.runsDist = map[string]string{"randomstop": accounting.Poisson, "gp": accounting.TNB}[f.tuner]
	}
	switch f.runsDist {
	case accounting.TNB:
		if !(f.eta > -1) || math.IsInf(f.eta, 1) {
			return p, usagef("--eta %v must be greater than −1", f.eta)
		}
		if p.rep, err = accounting.TNBWithMean(f.eta, f.meanRuns); err != nil {
			return p, usagef("--mean-runs %v: a TNB's mean must be finite and above 1", f.meanRuns)
		}
	case accounting.Poisson:
		p.rep = accounting.PoissonRepetitions(f.meanRuns)
		if err := p.rep.Check(); err != nil {
			return p, usagef("--mean-runs %v: a Poisson number of runs needs a mean of at least 1", f.meanRuns)
		}
	default:
		return p, usagef("unknown --runs-dist %q (want tnb or poisson)", f.runsDist)
	}
	var gp *tuning.GPOptions
	if f.tuner == "gp" {
		p.gp = tuning.GPOptions{MaxRatio: f.maxRatio, MinRatio: f.minRatio, Tau: f.tau, Beta: f.beta}
		if err := p.gp.Check(); err != nil {
			return p, usageError{err}
		}
		if p.rep.Distribution != accounting.TNB {
			return p, usagef("--tuner gp needs --runs-dist tnb (DP-HyPO's Theorem 1)")
		}
		gp = &p.gp
	} else {
		for _, n := range []string{"C", "c", "tau", "beta"} {
			if ch(n) {
				return p, usagef("--%s is a --tuner gp option", n)
			}
		}
	}
	n := ds.trainN - f.valSize
	q := float64(f.batchSize) / float64(n)
	t := &tuning.DPSGDTrainer{Arch: ds.arch, SamplingRate: q, Steps: dpsgd.StepsForEpochs(f.epochs, q),
		Momentum: f.momentum, LearningRate: DefaultLearningRate, ClipNorm: 1}
	if f.validation == "private" {
		t.ScoreNoise = f.scoreNoise
		t.Val = &data.Dataset{N: f.valSize} // for EventFor; replaced by the real split
	}
	sigma, err := tuning.CalibrateBase(t.EventFor, p.rep, gp, f.epsilon, f.delta)
	if err != nil {
		return p, usagef("ε = %g at δ = %g is too small for this tuning: %v", f.epsilon, f.delta, err)
	}
	t.NoiseMultiplier = sigma
	p.trainer, p.sigma = t, sigma
	return p, nil
}

// saveRelease writes the released model (if any) with its hyperparameters
// and ledger, and the report as file (report.json, or failed-report.json
// for a run that released nothing, so an earlier release is not clobbered),
// to dir.
func saveRelease(dir, file string, net *model.Net, hyper map[string]any, ledger accounting.Ledger, report any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if net != nil && hyper != nil {
		h, err := json.Marshal(hyper)
		if err != nil {
			return err
		}
		l, err := json.Marshal(ledger)
		if err != nil {
			return err
		}
		if err := net.Save(dir, model.Metadata{Hyperparameters: h, Ledger: l}); err != nil {
			return err
		}
	}
	js, err := json.MarshalIndent(report, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, file), append(js, '\n'), 0o644)
}

func writeDiagnostics(path string, runs []tuning.RunRecord) error {
	js, err := json.MarshalIndent(map[string]any{
		"warning": "NOT PRIVATE: the number of runs and every run's score; the privacy guarantee needs them hidden. For the data curator only.",
		"runs":    runs,
	}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(js, '\n'), 0o600)
}

func printTune(w io.Writer, r tuneReport) {
	if r.Selected == nil {
		fmt.Fprintln(w, "released       nothing (no run was made or tuning was interrupted)")
	} else {
		fmt.Fprintf(w, "selected       learning rate %.4g, clipping norm %.4g\n", r.Selected[tuning.LearningRate], r.Selected[tuning.ClipNorm])
		fmt.Fprintf(w, "validation     %.4f (%s score)\n", *r.ValidationScore, r.Validation)
		if r.TestAccuracy != nil {
			fmt.Fprintf(w, "test accuracy  %.4f\n", *r.TestAccuracy)
		}
	}
	fmt.Fprintf(w, "privacy        ε = %.4f, δ = %g in total (rdp): one run alone ε = %.4f, tuning overhead %.4f\n",
		r.Epsilon, r.Delta, r.BaseEpsilon, r.TuningOverhead)
	fmt.Fprintf(w, "runs           %s, each σ = %.4f, q = %.6g, %d steps\n", r.Repetitions, r.BaseNoiseMultiplier, r.SamplingRate, r.Steps)
}

// keyedValidationSplit holds out about nVal examples of train for scoring,
// by a keyed hash of each example (data.KeyedSplit), so that adding or
// removing one example changes either the training split or the validation
// split, never both. The key comes from the seed's stream or crypto/rand.
func keyedValidationSplit(train *data.Dataset, nVal int, seed *uint64) (fit, val *data.Dataset, err error) {
	v := float64(nVal) / float64(train.N)
	parts, err := data.KeyedSplit(train, []float64{1 - v, v}, randsrc.New(seed, "validation split").Uint64())
	if err != nil {
		return nil, nil, err
	}
	return parts[0], parts[1], nil
}

// warnSeeded tells the user that a seeded run's noise can be recomputed from
// the seed.
func warnSeeded(w io.Writer, seed *uint64) {
	if seed != nil {
		fmt.Fprintln(w, "note: --seed makes every draw (runs, noise, splits) recomputable from the seed; the guarantee holds only while the seed stays secret. It is not written to any report.")
	}
}
