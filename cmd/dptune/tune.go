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
	"github.com/dptune/dptune/dpsgd/noise"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

type tuneFlags struct {
	data                                           dataFlags
	tuner, space, runsDist, validation, publicVal  string
	out, diagnostics                               string
	epsilon, delta, eta, meanRuns, momentum, score float64
	maxRatio, minRatio, tau, beta                  float64
	epochs, batchSize, valSize                     int
	seed                                           uint64
	doubling                                       doublingFlags
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
              capped doubling AboveThreshold search, one final DP-SGD run

For every tuner --epsilon and --delta are the total budget of tuning and
release together: each run's noise multiplier (for doubling, the final run's)
is calibrated so that the whole pipeline meets them.

Validation scores are private by default: each run's number of correct
validation predictions is released as an integer plus discrete Gaussian noise
(--score-noise is its noise multiplier, in examples), counted in the ledger.
--validation public scores on a set you declare public and disjoint from the
private training data, read from --public-val-dir; it costs nothing.`,
		Example: `  dptune tune --tuner randomstop --epsilon 8 --out out/tune
  dptune tune --tuner gp --space mnist-dphypo --mean-runs 10 --epsilon 8 --out out/gp
  dptune tune --tuner doubling --space mnist-doubling --epsilon 8 --out out/doubling
  dptune tune --validation public --public-val-dir DIR --epsilon 4 --out out/public`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTune(cmd, f) },
	}
	fl := cmd.Flags()
	addDataFlags(fl, &f.data)
	fl.StringVar(&f.tuner, "tuner", "randomstop", "randomstop, gp or doubling")
	fl.Float64Var(&f.epsilon, "epsilon", 8, "total ε in nats of tuning and release")
	fl.Float64Var(&f.delta, "delta", 1e-5, "total δ")
	fl.StringVar(&f.space, "space", "", "search space: mnist-dphypo, cifar10-dphypo, mnist-doubling or a .json file (default: the dataset's DP-HyPO grid)")
	fl.StringVar(&f.runsDist, "runs-dist", "", "distribution of the number of runs: tnb or poisson (default: poisson for randomstop, tnb for gp, which needs it)")
	fl.Float64Var(&f.eta, "eta", 1, "TNB shape η > −1 (1: geometric, 0: logarithmic)")
	fl.Float64Var(&f.meanRuns, "mean-runs", 20, "expected number of runs E[K]")
	fl.IntVar(&f.epochs, "epochs", 3, "epochs of each DP-SGD run")
	fl.IntVar(&f.batchSize, "batch-size", 256, "expected batch size of each run")
	fl.Float64Var(&f.momentum, "momentum", 0, "SGD momentum of each run")
	fl.IntVar(&f.valSize, "val-size", 5000, "validation examples held out of the private training set for private scores (a declared, nominal size)")
	fl.StringVar(&f.validation, "validation", "private", "private (scores released as noisy integer counts, counted) or public (scored on --public-val-dir: not counted)")
	fl.StringVar(&f.publicVal, "public-val-dir", "", "with --validation public: a directory of public validation data, disjoint from the private training data, in the dataset's format (its training files are the validation set)")
	fl.Float64Var(&f.score, "score-noise", 20, "noise multiplier of a private score: standard deviation of the discrete Gaussian added to the count of correct predictions")
	fl.Float64Var(&f.maxRatio, "C", 2, "gp: upper density bound C (× the uniform prior)")
	fl.Float64Var(&f.minRatio, "c", 0.75, "gp: lower density bound c, in (0, 1]")
	fl.Float64Var(&f.tau, "tau", 0.1, "gp: UCB weight τ ≥ 0 (0: the posterior mean alone)")
	fl.Float64Var(&f.beta, "beta", 1, "gp: softmax inverse temperature β > 0")
	fl.Uint64Var(&f.seed, "seed", 0, "makes the tuning reproducible, with fast (not secure) noise (default: crypto/rand and secure noise)")
	fl.StringVar(&f.out, "out", "out/tune", "where the model and report.json go")
	fl.StringVar(&f.diagnostics, "diagnostics", "", "NOT PRIVATE: write every run's candidate and score to this file (the curator's eyes only)")
	addDoublingFlags(fl, &f.doubling)
	return cmd
}

// tuneReport is report.json: what the tuner released. It has no number of
// runs and no other run's score, and every size in it is nominal.
type tuneReport struct {
	Tuner           string             `json:"tuner"`
	Dataset         string             `json:"dataset"`
	NominalSize     int                `json:"nominal_size"`
	Space           string             `json:"space"`
	Selected        map[string]float64 `json:"selected"`
	ValidationScore *float64           `json:"validation_score"`
	// ValidationCount is the private score's released integer: correct
	// predictions plus discrete Gaussian noise (validation_score ×
	// validation_size).
	ValidationCount     *int64                 `json:"validation_noisy_count,omitempty"`
	Validation          string                 `json:"validation"`
	ValidationSize      int                    `json:"validation_size"` // nominal n_val of a private score; 0 when public
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
	SecureNoise         bool                   `json:"secure_noise"`
	Interrupted         bool                   `json:"interrupted"`
	Failed              string                 `json:"failed,omitempty"`
	Ledger              accounting.Ledger      `json:"ledger"`
}

func runTune(cmd *cobra.Command, f tuneFlags) error {
	start := time.Now()
	ds, err := lookupDataset(f.data.dataset)
	if err != nil {
		return err
	}
	if f.tuner == "doubling" {
		return runDoubling(cmd, f, ds, start)
	}
	ctx := cmd.Context()
	plan, err := f.plan(cmd, ds)
	if err != nil {
		return err
	}
	trainer := plan.trainer
	w := cmd.ErrOrStderr()
	fmt.Fprintf(w, "tuning %s with %s over %s (%d candidates): each run %d epochs at σ = %.4f; total budget ε = %g, δ = %g\n",
		f.data.dataset, f.tuner, plan.space.Name, plan.space.Size(), f.epochs, trainer.NoiseMultiplier, f.epsilon, f.delta)
	worst := tuning.Pipeline(trainer.Event(), plan.rep, plan.gp)
	resv, err := reserve(f.data.budget, f.data.dataset, "tune", fmt.Sprintf("dptune tune --tuner %s → %s", f.tuner, f.out), ledgerOf(plan.label, worst))
	if err != nil {
		return err
	}
	train, test, err := loadDataset(w, f.data.dataset, ds, f.data.dataDir, plan.nominal)
	if err != nil {
		return resv.done(accounting.Ledger{}, err)
	}
	var seed *uint64
	if cmd.Flags().Changed("seed") {
		seed = &f.seed
	}
	if f.validation == "public" {
		trainer.Data = train
		if trainer.Val, err = loadPublicVal(f.data.dataset, ds, f.publicVal); err != nil {
			return resv.done(accounting.Ledger{}, err)
		}
	} else if trainer.Data, trainer.Val, err = keyedValidationSplit(train, f.valSize, plan.nominal, seed); err != nil {
		return resv.done(accounting.Ledger{}, err)
	}
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
	var res tuning.Result
	var tuneErr error
	if plan.gp != nil {
		res, tuneErr = tuning.GPTune(ctx, cfg, *plan.gp)
	} else {
		res, tuneErr = tuning.RandomStop(ctx, cfg)
	}
	if bar != nil {
		bar.Finish()
		fmt.Fprintln(w)
	}
	interrupted := errors.Is(tuneErr, context.Canceled)

	rep := tuneReport{Tuner: f.tuner, Dataset: f.data.dataset, NominalSize: plan.nominal, Space: plan.space.Name, Validation: f.validation,
		ValidationSize: trainer.ValSize, Delta: f.delta, Accountant: "rdp", BaseNoiseMultiplier: trainer.NoiseMultiplier,
		Repetitions: plan.rep, MeanRuns: plan.rep.Mean(), Epochs: f.epochs, BatchSize: f.batchSize, SamplingRate: trainer.SamplingRate,
		Steps: trainer.Steps, Seeded: seed != nil, SecureNoise: seed == nil, Interrupted: interrupted, Ledger: res.Ledger}
	if tuneErr != nil && !interrupted {
		// The runs so far touched the data: the ledger is written anyway.
		rep.Failed = tuneErr.Error()
		if err := saveRelease(f.out, "failed-report.json", nil, nil, rep.Ledger, rep); err != nil {
			return resv.done(res.Ledger, err)
		}
		return resv.done(res.Ledger, fmt.Errorf("%w (nothing released; the ledger is in %s/failed-report.json)", tuneErr, f.out))
	}
	g, err := res.Ledger.Spent(accounting.RDP{}, f.delta)
	if err != nil {
		return resv.done(res.Ledger, err)
	}
	rep.Epsilon = g.Epsilon
	if b, err := (accounting.RDP{}).Epsilon(trainer.Event(), f.delta); err == nil {
		rep.BaseEpsilon, rep.TuningOverhead = b.Epsilon, rep.Epsilon-b.Epsilon
	}
	if !interrupted && res.Selected != nil && res.Model != nil {
		rep.Selected = res.Selected.Values
		rep.ValidationScore = &res.Score
		if trainer.ScoreNoise > 0 {
			rep.ValidationCount = &res.NoisyCount
		}
		m, err := dpsgd.Evaluate(ctx, res.Model, test.X, test.Y)
		if err != nil && !errors.Is(err, context.Canceled) {
			return resv.done(res.Ledger, err)
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
		return resv.done(res.Ledger, err)
	}
	if f.diagnostics != "" {
		if err := writeDiagnostics(f.diagnostics, res.Diagnostics); err != nil {
			return resv.done(res.Ledger, err)
		}
	}
	printTune(cmd.OutOrStdout(), rep)
	fmt.Fprintf(w, "wall time      %.1f s (curator-side: it grows with the number of runs, so it is not in the report)\n", time.Since(start).Seconds())
	if interrupted {
		return resv.done(res.Ledger, fmt.Errorf("interrupted: nothing released; the ledger in %s still counts the whole tuning budget: %w", f.out, context.Canceled))
	}
	return resv.done(res.Ledger, nil)
}

// tunePlan is the validated request, with the calibrated base noise.
type tunePlan struct {
	space   tuning.Space
	rep     accounting.Repetitions
	gp      *tuning.GPOptions // nil: random-stop
	trainer *tuning.DPSGDTrainer
	nominal int    // the training set's nominal size
	label   string // the ledger label of the tuning
}

// plan checks every flag and calibrates the base run's σ, all from nominal
// sizes and before any data is read.
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
	if err := f.data.checkBudgetUnseeded(cmd); err != nil {
		return p, err
	}
	nominal, err := f.data.nominal(cmd, ds)
	if err != nil {
		return p, err
	}
	p.nominal = nominal
	space, err := loadSpace(f.space, f.data.dataset)
	if err != nil {
		return p, usageError{err}
	}
	p.space = space
	n := nominal
	switch f.validation {
	case "private":
		if ch("public-val-dir") {
			return p, usagef("--public-val-dir needs --validation public")
		}
		if f.valSize < 100 || f.valSize >= nominal/2 {
			return p, usagef("--val-size %d is outside [100, %d)", f.valSize, nominal/2)
		}
		if !(f.score > 0 && f.score <= noise.MaxDiscreteSigma) {
			return p, usagef("--score-noise %v is outside (0, %g]", f.score, noise.MaxDiscreteSigma)
		}
		n -= f.valSize
	case "public":
		if f.publicVal == "" {
			return p, usagef("--validation public needs --public-val-dir DIR: public validation data you declare disjoint from the private training data")
		}
		if err := checkPublicVal(f.publicVal, f.data.dataDir, f.data.dataset); err != nil {
			return p, err
		}
		if ch("score-noise") || ch("val-size") {
			return p, usagef("--score-noise and --val-size apply to --validation private only")
		}
	default:
		return p, usagef("--validation %q: want private or public", f.validation)
	}
	switch {
	case f.batchSize < 1 || f.batchSize > n:
		return p, usagef("--batch-size %d is outside [1, %d]", f.batchSize, n)
	case !(f.momentum >= 0 && f.momentum < 1):
		return p, usagef("--momentum %v is outside [0, 1)", f.momentum)
	}
	q := float64(f.batchSize) / float64(n)
	if err := dpsgd.CheckEpochs(f.epochs, q); err != nil {
		return p, usagef("--epochs %d: %v", f.epochs, err)
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
	p.label = "random-stop tuning, " + p.rep.String() + " runs, best released"
	if f.tuner == "gp" {
		gp := tuning.GPOptions{MaxRatio: f.maxRatio, MinRatio: f.minRatio, Tau: f.tau, Beta: f.beta}
		if err := gp.Check(); err != nil {
			return p, usageError{err}
		}
		if p.rep.Distribution != accounting.TNB {
			return p, usagef("--tuner gp needs --runs-dist tnb (DP-HyPO's Theorem 1)")
		}
		p.gp = &gp
		p.label = fmt.Sprintf("DP-HyPO (GP) tuning, %s runs, densities in [%g, %g] × prior, best released", p.rep, gp.MinRatio, gp.MaxRatio)
	} else {
		for _, n := range []string{"C", "c", "tau", "beta"} {
			if ch(n) {
				return p, usagef("--%s is a --tuner gp option", n)
			}
		}
	}
	if err := checkWritable(f.out); err != nil {
		return p, err
	}
	t := &tuning.DPSGDTrainer{Arch: ds.arch, SamplingRate: q, ExpectedBatchSize: float64(f.batchSize),
		Steps: dpsgd.StepsForEpochs(f.epochs, q), Momentum: f.momentum, LearningRate: DefaultLearningRate, ClipNorm: 1}
	if f.validation == "private" {
		t.ScoreNoise, t.ValSize = f.score, f.valSize
	}
	sigma, err := tuning.CalibrateBase(cmd.Context(), t.EventFor, p.rep, p.gp, f.epsilon, f.delta)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return p, err
		}
		return p, usagef("ε = %g at δ = %g is too small for this tuning: %v", f.epsilon, f.delta, err)
	}
	t.NoiseMultiplier = sigma
	p.trainer = t
	return p, nil
}

// ledgerOf is a ledger of one event.
func ledgerOf(label string, e accounting.Event) accounting.Ledger {
	var l accounting.Ledger
	l.Add(label, e)
	return l
}

// loadPublicVal reads the public validation set: the training files of the
// dataset-format directory dir, which the user declares public and disjoint
// from the private training data.
func loadPublicVal(name string, ds datasetInfo, dir string) (*data.Dataset, error) {
	val, _, err := ds.load(dir)
	if err != nil {
		return nil, fmt.Errorf("loading the public validation set of %s from %s: %w", name, dir, err)
	}
	return val, nil
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
	fmt.Fprintf(w, "runs           %s, each σ = %.4f, q = %.6g, %d steps, %s\n", r.Repetitions, r.BaseNoiseMultiplier, r.SamplingRate, r.Steps,
		map[bool]string{true: "secure noise", false: "fast noise (seeded: reproducible, not secure)"}[r.SecureNoise])
}

// keyedValidationSplit holds out about nVal of the nominal examples of
// train for scoring, by a keyed hash of each example (data.KeyedSplit), so
// that adding or removing one example changes either the training split or
// the validation split, never both. The fraction is nVal/nominal — public —
// and the key comes from the seed's stream or crypto/rand.
func keyedValidationSplit(train *data.Dataset, nVal, nominal int, seed *uint64) (fit, val *data.Dataset, err error) {
	v := float64(nVal) / float64(nominal)
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
