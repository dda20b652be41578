package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/dpsgd/accounting"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/tuning"
)

type doublingFlags struct {
	partitions, maxIterations, partEpochs int
	epsilon0, granularity, u0             float64
	private                               bool
	partitionNoise                        float64
	cache                                 string
}

var doublingFlagNames = []string{"partitions", "epsilon0", "granularity", "u0", "max-iterations", "private-partitions", "partition-noise", "part-epochs", "cache"}

func addDoublingFlags(fl *pflag.FlagSet, d *doublingFlags) {
	fl.IntVar(&d.partitions, "partitions", 10, "doubling: number k of disjoint training parts")
	fl.Float64Var(&d.epsilon0, "epsilon0", 0.1, "doubling: ϵ in nats of one search iteration")
	fl.Float64Var(&d.granularity, "granularity", 0.01, "doubling: utility granularity g")
	fl.Float64Var(&d.u0, "u0", 0, "doubling: utility lower bound u₀")
	fl.IntVar(&d.maxIterations, "max-iterations", 0, "doubling: iteration cap T_max (default ⌈5·log₂((1−u₀)/g)⌉)")
	fl.BoolVar(&d.private, "private-partitions", false, "doubling: train the parts with DP-SGD (default: clipped, without noise)")
	fl.Float64Var(&d.partitionNoise, "partition-noise", 1, "doubling: noise multiplier of private part runs")
	fl.IntVar(&d.partEpochs, "part-epochs", 3, "doubling: epochs of each part run")
	fl.StringVar(&d.cache, "cache", "", "doubling: file of finished part scores, reused on a rerun (default: OUT/partition-scores.csv)")
}

// doublingReport is report.json of the doubling tuner.
type doublingReport struct {
	Tuner               string             `json:"tuner"`
	Dataset             string             `json:"dataset"`
	NominalSize         int                `json:"nominal_size"`
	Space               string             `json:"space"`
	Candidates          int                `json:"candidates"`
	Selected            map[string]float64 `json:"selected"`
	Fallback            bool               `json:"fallback_first_candidate"`
	TestAccuracy        *float64           `json:"test_accuracy"`
	Epsilon             float64            `json:"epsilon"` // the ledger's: what was spent
	Delta               float64            `json:"delta"`
	Accountant          string             `json:"accountant"`
	FinalEpsilon        float64            `json:"final_run_epsilon"`       // of the final run's completed steps
	TuningOverhead      float64            `json:"tuning_overhead_epsilon"` // T_max·ϵ
	BaseNoiseMultiplier float64            `json:"base_noise_multiplier"`   // the final run's σ
	Partitions          int                `json:"partitions"`
	Epsilon0            float64            `json:"epsilon0"`
	Granularity         float64            `json:"granularity"`
	U0                  float64            `json:"u0"`
	MaxIterations       int                `json:"max_iterations"`
	// Realised iterations and the paper's with-high-probability figure,
	// for comparison only: the guarantee is the ledger's, at the cap.
	RealisedIterations int               `json:"realised_iterations_not_the_guarantee"`
	PaperWHPEpsilon    float64           `json:"paper_whp_epsilon_not_the_guarantee"`
	EarlierSearches    int               `json:"earlier_searches_on_this_cache"`
	PrivatePartitions  bool              `json:"private_partitions"`
	Epochs             int               `json:"final_epochs"`
	FinalSteps         int               `json:"final_steps_done"`
	PartEpochs         int               `json:"part_epochs"`
	Seeded             bool              `json:"seeded"` // the seed itself is never written
	SecureNoise        bool              `json:"secure_noise"`
	Interrupted        bool              `json:"interrupted"`
	Failed             string            `json:"failed,omitempty"`
	Ledger             accounting.Ledger `json:"ledger"`
}

func runDoubling(cmd *cobra.Command, f tuneFlags, ds datasetInfo, start time.Time) error {
	d := f.doubling
	ch := cmd.Flags().Changed
	ctx := cmd.Context()
	for _, n := range []string{"C", "c", "tau", "beta", "eta", "mean-runs", "runs-dist", "validation", "public-val-dir", "score-noise", "diagnostics"} {
		if ch(n) {
			return usagef("--%s is not a --tuner doubling option", n)
		}
	}
	if err := accounting.CheckEpsilon(f.epsilon); err != nil {
		return usagef("--epsilon: %v", err)
	}
	if err := accounting.CheckDelta(f.delta); err != nil {
		return usagef("--delta: %v", err)
	}
	if err := f.data.checkBudgetUnseeded(cmd); err != nil {
		return err
	}
	nominal, err := f.data.nominal(cmd, ds)
	if err != nil {
		return err
	}
	space, err := loadSpace(f.space, f.data.dataset)
	if err != nil {
		return usageError{err}
	}
	if d.maxIterations == 0 {
		d.maxIterations = tuning.DefaultMaxIterations(d.u0, d.granularity)
	}
	search := tuning.DoublingConfig{Partitions: d.partitions, Epsilon0: d.epsilon0, Granularity: d.granularity, U0: d.u0, MaxIterations: d.maxIterations}
	if err := search.Check(); err != nil {
		return usageError{err}
	}
	fitN := nominal - f.valSize
	switch {
	case f.batchSize < 1:
		return usagef("--batch-size %d must be at least 1", f.batchSize)
	case !(f.momentum >= 0 && f.momentum < 1):
		return usagef("--momentum %v is outside [0, 1)", f.momentum)
	case f.valSize < 100 || f.valSize >= nominal/2:
		return usagef("--val-size %d is outside [100, %d)", f.valSize, nominal/2)
	case f.valSize < d.partitions:
		return usagef("--val-size %d is smaller than --partitions %d: a score's sensitivity 1/n_val would exceed 1/k", f.valSize, d.partitions)
	case d.partitions > fitN/f.batchSize:
		return usagef("--partitions %d leaves fewer than --batch-size %d examples per part", d.partitions, f.batchSize)
	case d.private && (!(d.partitionNoise > 0) || math.IsInf(d.partitionNoise, 1)):
		return usagef("--partition-noise %v must be positive and finite", d.partitionNoise)
	}
	q := float64(f.batchSize) / float64(fitN)
	partQ := float64(f.batchSize) / float64(fitN/d.partitions)
	if err := dpsgd.CheckEpochs(f.epochs, q); err != nil {
		return usagef("--epochs %d: %v", f.epochs, err)
	}
	if err := dpsgd.CheckEpochs(d.partEpochs, partQ); err != nil {
		return usagef("--part-epochs %d: %v", d.partEpochs, err)
	}
	if err := checkWritable(f.out); err != nil {
		return err
	}
	w := cmd.ErrOrStderr()
	var seed *uint64
	if ch("seed") {
		seed = &f.seed
	}
	scorer := &tuning.PartitionScorer{Arch: ds.arch, ValSize: f.valSize, Epochs: d.partEpochs, BatchSize: f.batchSize, SamplingRate: partQ,
		Momentum: f.momentum, Private: d.private, NoiseMultiplier: d.partitionNoise, Cache: d.cache,
		Warn: func(msg string) { fmt.Fprintln(w, "warning:", msg) }}
	steps := dpsgd.StepsForEpochs(f.epochs, q)
	tuner := &tuning.DoublingTuner{Space: space, Search: search, Arch: ds.arch, Seed: seed, Scorer: scorer,
		Final: dpsgd.Config{SamplingRate: q, ExpectedBatchSize: float64(f.batchSize), Steps: steps, Momentum: f.momentum}}
	// --epsilon is the total: the final run gets what the partition runs and
	// the search's cap leave.
	searchLedger := tuner.SearchLedger()
	total := func(sigma float64) accounting.Event {
		return accounting.Composed{Events: []accounting.Event{searchLedger.Event(), accounting.DPSGD(sigma, q, steps)}}
	}
	sigma, err := accounting.CalibrateNoise(ctx, accounting.RDP{}, total, f.epsilon, f.delta)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		over, _ := searchLedger.Spent(accounting.RDP{}, f.delta)
		return usagef("--epsilon %g is too small: the search alone (at most %d iterations of ϵ = %g) spends ε = %.4f at δ = %g, leaving nothing for the final run: %v",
			f.epsilon, d.maxIterations, d.epsilon0, over.Epsilon, f.delta, err)
	}
	tuner.Final.NoiseMultiplier = sigma
	if k := float64(d.partitions) * d.epsilon0; k < 5 {
		fmt.Fprintf(w, "warning: k·ϵ = %g is below 5; Ding et al. advise k ≥ 5/ϵ (here %d partitions), else the search picks poor candidates\n", k, int(math.Ceil(5/d.epsilon0)))
	}
	worst := searchLedger
	worst.Add("final DP-SGD run with the selected candidate", accounting.DPSGD(sigma, q, steps))
	resv, err := reserve(f.data.budget, f.data.dataset, "tune", fmt.Sprintf("dptune tune --tuner doubling → %s", f.out), worst)
	if err != nil {
		return err
	}

	train, test, err := loadDataset(w, f.data.dataset, ds, f.data.dataDir, nominal)
	if err != nil {
		return resv.done(accounting.Ledger{}, err)
	}
	// Keyed splits: adding or removing one example changes one part (or the
	// validation set) only, as Lemma 2 needs under add/remove adjacency.
	fit, val, err := keyedValidationSplit(train, f.valSize, nominal, seed)
	if err != nil {
		return resv.done(accounting.Ledger{}, err)
	}
	partKey := randsrc.New(seed, "partition").Uint64()
	fracs := make([]float64, d.partitions)
	for i := range fracs {
		fracs[i] = 1
	}
	parts, err := data.KeyedSplit(fit, fracs, partKey)
	if err != nil {
		return resv.done(accounting.Ledger{}, err)
	}
	if scorer.Cache == "" {
		scorer.Cache = filepath.Join(curatorDir(f.out), "partition-scores.csv")
	}
	if err := os.MkdirAll(filepath.Dir(scorer.Cache), 0o700); err != nil {
		return resv.done(accounting.Ledger{}, err)
	}
	scorer.Parts, scorer.Val, tuner.Train = parts, val, fit
	scorer.Seed = randsrc.New(seed, "part runs").Uint64() // fresh when unseeded
	scorer.SplitID = fmt.Sprintf("%016x", randsrc.Seeded(partKey, "split id").Uint64())
	if earlier, err := scorer.Searches(); err == nil && len(earlier) > 0 {
		var spent float64
		for _, s := range earlier {
			spent += s.Epsilon
		}
		fmt.Fprintf(w, "note: %s already served %d search(es) spending ε = %.4g in total (pure DP); this search composes with them — each counts in a budget file only if it ran with that --budget\n",
			scorer.Cache, len(earlier), spent)
	}
	warnSeeded(w, seed)
	fmt.Fprintf(w, "doubling tuner on %s: %d candidates × %d parts of about %d examples (%s part runs, %d epochs), cap %d iterations at ϵ = %g; final run σ = %.4f, total ε = %g\n",
		f.data.dataset, space.Size(), d.partitions, fitN/d.partitions, map[bool]string{false: "non-private", true: "DP-SGD"}[d.private], d.partEpochs, d.maxIterations, d.epsilon0, sigma, f.epsilon)
	bar := progressbar.NewOptions(space.Size()*d.partitions, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("part runs"),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(25),
		progressbar.OptionThrottle(time.Second), progressbar.OptionShowElapsedTimeOnFinish())
	scorer.Progress = func(done, _ int) { bar.Set(done) }
	res, runErr := tuner.Run(ctx)
	bar.Finish()
	fmt.Fprintln(w)
	interrupted := errors.Is(runErr, context.Canceled)
	rep := doublingReport{Tuner: "doubling", Dataset: f.data.dataset, NominalSize: nominal, Space: space.Name, Candidates: space.Size(), Fallback: res.Fallback,
		Delta: f.delta, Accountant: "rdp", BaseNoiseMultiplier: sigma, Partitions: d.partitions, Epsilon0: d.epsilon0,
		Granularity: d.granularity, U0: d.u0, MaxIterations: d.maxIterations, RealisedIterations: res.Iterations, EarlierSearches: len(res.EarlierSearches),
		PrivatePartitions: d.private, Epochs: f.epochs, FinalSteps: res.FinalSteps, PartEpochs: d.partEpochs, Seeded: seed != nil, SecureNoise: seed == nil,
		Interrupted: interrupted, Ledger: res.Ledger}
	if runErr != nil && !interrupted {
		rep.Failed = runErr.Error()
	}
	g, err := res.Ledger.Spent(accounting.RDP{}, f.delta)
	if err != nil {
		return resv.done(res.Ledger, err)
	}
	rep.Epsilon = g.Epsilon
	if fe, err := (accounting.RDP{}).Epsilon(accounting.DPSGD(sigma, q, res.FinalSteps), f.delta); err == nil {
		rep.FinalEpsilon = fe.Epsilon
	}
	rep.TuningOverhead = float64(d.maxIterations) * search.IterationEpsilon()
	nn := (1 - d.u0) / d.granularity
	rep.PaperWHPEpsilon = rep.FinalEpsilon + 3*math.Log2(math.Max(nn, 2))*d.epsilon0
	if !interrupted && runErr == nil && res.Selected != nil {
		rep.Selected = res.Selected.Values
		m, err := dpsgd.Evaluate(ctx, res.Model, test.X, test.Y)
		if err == nil {
			rep.TestAccuracy = &m.Accuracy
		}
	}
	var hyper map[string]any
	if rep.Selected != nil {
		hyper = map[string]any{"selected": rep.Selected, "noise_multiplier": sigma, "sampling_rate": q, "steps": steps, "tuner": "doubling"}
	}
	file := "report.json"
	if rep.Failed != "" {
		file = "failed-report.json"
	}
	if err := saveRelease(f.out, file, res.Model, hyper, res.Ledger, rep); err != nil {
		return resv.done(res.Ledger, err)
	}
	printDoubling(cmd.OutOrStdout(), rep)
	fmt.Fprintf(w, "wall time      %.1f s (curator-side, not in the report)\n", time.Since(start).Seconds())
	if rep.Failed != "" {
		return resv.done(res.Ledger, fmt.Errorf("%w (nothing released; the ledger is in %s/failed-report.json)", runErr, f.out))
	}
	if interrupted {
		return resv.done(res.Ledger, fmt.Errorf("interrupted; finished part runs are kept in %s for a rerun: %w", scorer.Cache, context.Canceled))
	}
	return resv.done(res.Ledger, nil)
}

func printDoubling(w io.Writer, r doublingReport) {
	if r.Selected != nil {
		note := ""
		if r.Fallback {
			note = "  (no candidate passed the search: the first candidate, fixed in advance)"
		}
		fmt.Fprintf(w, "selected       learning rate %.4g, clipping norm %.4g%s\n", r.Selected[tuning.LearningRate], r.Selected[tuning.ClipNorm], note)
	} else {
		fmt.Fprintln(w, "released       nothing (interrupted or failed)")
	}
	if r.TestAccuracy != nil {
		fmt.Fprintf(w, "test accuracy  %.4f\n", *r.TestAccuracy)
	}
	final := fmt.Sprintf("final run %.4f", r.FinalEpsilon)
	if r.FinalSteps == 0 {
		final = "no final run"
	} else if r.Interrupted || r.Failed != "" {
		final = fmt.Sprintf("final run %.4f (%d steps done)", r.FinalEpsilon, r.FinalSteps)
	}
	fmt.Fprintf(w, "privacy        ε = %.4f, δ = %g spent (rdp): %s + search at most %d × %g = %.4f\n",
		r.Epsilon, r.Delta, final, r.MaxIterations, r.Epsilon0, r.TuningOverhead)
	fmt.Fprintf(w, "iterations     %d realised of the cap %d; the paper's w.h.p. figure ε + 3·log₂(n)·ϵ = %.4f (not a guarantee)\n",
		r.RealisedIterations, r.MaxIterations, r.PaperWHPEpsilon)
}
