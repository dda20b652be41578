package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// tuneFlags are the flags of tune and vote serve: the request, the
// tuners' own options (pointers by name), the data and the runner.
type tuneFlags struct {
	job.TuneRequest
	data    dataFlags
	options map[string]any
	run     runnerFlags
}

// request completes f's request from what cmd was given: the flags given,
// the tuners' options, the data's names and budget file.
func (f *tuneFlags) request(cmd *cobra.Command) {
	f.Given, f.Options = given(cmd), optionValues(f.options)
	f.Dataset, f.Model, f.Budget = f.data.dataset, f.data.model, f.data.budget
}

func newTuneCmd() *cobra.Command {
	var f tuneFlags
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Choose learning rate and clipping norm privately, and release the best model",
		Long: `tune runs private hyperparameter tuning around full DP-SGD runs and releases
only the selected hyperparameters, the model trained with them, its score and
the ledger — never the number of runs or the other runs' scores.

` + tunerHelp() + `
For every tuner --epsilon and --delta are the total budget of tuning and
release together: each run's noise multiplier (for a tuner on disjoint
parts, the final run's) is calibrated so that the whole pipeline meets them.

Validation scores are private by default: each run's number of correct
validation predictions is released as an integer plus discrete Gaussian noise
(--score-noise is its noise multiplier, in examples), counted in the ledger.
--validation public scores on a set you declare public and disjoint from the
private training data, read from --public-val-dir; it costs nothing.

The built-in ScatterNet networks (--model scatter-linear-mnist, …) carry
their own settings: each run takes them for every one of --epochs,
--batch-size and --momentum not given, and for the learning rate or clipping
norm when the space has no such dimension; their features are computed once
per dataset and kept in --feature-cache.

--clipping automatic trains every run with automatic clipping (Bu et al.
2023, AUTO-S: g/(‖g‖ + γ), sensitivity 1; see dptune train): there is no
clipping norm to choose, so the default space loses its clip_norm
dimension, a --space with one is refused, and a network's own learning rate
η at C stands as η·C.`,
		Example: `  dptune tune --epsilon 8 --out out/tune
` + tunerExamples() + `  dptune tune --validation public --public-val-dir DIR --epsilon 4 --out out/public`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runTune(cmd, f) },
	}
	fl := cmd.Flags()
	addDataFlags(fl, &f.data)
	fl.StringVar(&f.Tuner, "tuner", tuning.Default, tuning.NamesList(nil))
	fl.Float64Var(&f.Epsilon, "epsilon", 8, "total ε in nats of tuning and release")
	fl.Float64Var(&f.Delta, "delta", 1e-5, "total δ")
	fl.StringVar(&f.Space, "space", "", "search space: "+tuning.SpacesList()+" (default: scatter-<dataset> for a ScatterNet network, else the dataset's DP-HyPO grid; dimensions: learning_rate, clip_norm, momentum, batch_size, epochs, lr_schedule, network)")
	fl.StringVar(&f.RunsDist, "runs-dist", "", "distribution of the number of runs: tnb or poisson (default: "+defaultRunsHelp()+")")
	fl.Float64Var(&f.Eta, "eta", 1, "TNB shape η > −1 (1: geometric, 0: logarithmic)")
	fl.Float64Var(&f.MeanRuns, "mean-runs", 20, "expected number of runs E[K]")
	fl.IntVar(&f.Epochs, "epochs", 3, "epochs of each DP-SGD run")
	fl.IntVar(&f.BatchSize, "batch-size", 256, "expected batch size of each run")
	fl.Float64Var(&f.Momentum, "momentum", 0, "SGD momentum of each run")
	fl.StringVar(&f.Clipping.Rule, "clipping", "flat", "per-example clipping of every run: flat (to the candidate's or the network's clipping norm) or automatic (g/(‖g‖ + γ): no clipping norm, so none in the space)")
	fl.Float64Var(&f.Clipping.Gamma, "auto-clip-gamma", dpsgd.DefaultAutoClipGamma, "stability constant γ > 0 of --clipping automatic")
	fl.IntVar(&f.ValSize, "val-size", 5000, "validation examples held out of the private training set for private scores (a declared, nominal size)")
	fl.StringVar(&f.Validation, "validation", "private", "private (scores released as noisy integer counts, counted) or public (scored on --public-val-dir: not counted)")
	fl.StringVar(&f.PublicValDir, "public-val-dir", "", "with --validation public: a directory of public validation data, disjoint from the private training data, in the dataset's format (its training files are the validation set)")
	fl.StringVar(&f.Accountant, "accountant", "rdp", "random-stop tuning with --validation public: rdp (Papernot & Steinke, proved) or xiang-o (Xiang et al.'s Algorithm 3 for DP-SGD bases: an APPROXIMATION, reported beside the proved ε)")
	fl.Float64Var(&f.ScoreNoise, "score-noise", 20, "noise multiplier of a private score: standard deviation of the discrete Gaussian added to the count of correct predictions")
	fl.Uint64Var(&f.Seed, "seed", 0, "makes the tuning reproducible, with fast (not secure) noise (default: crypto/rand and secure noise)")
	fl.StringVar(&f.Out, "out", "out/tune", "where the model and report.json go")
	fl.StringVar(&f.Diagnostics, "diagnostics", "", "NOT PRIVATE: write every run's candidate and score to this file (the curator's eyes only)")
	addSplitFlags(fl, &f.TuneRequest)
	f.options = addTunerFlags(fl)
	addRunnerFlags(fl, &f.run)
	addResumeFlag(fl, &f.Resume)
	return cmd
}

func runTune(cmd *cobra.Command, f tuneFlags) error {
	f.request(cmd)
	if t, ok := job.TunerInfoOf(f.Tuner); ok && t.Federated {
		return serveVote(cmd, f, "", &t)
	}
	start := time.Now()
	if f.Resume == "" {
		if err := f.run.check(cmd); err != nil {
			return err
		}
		f.Label = fmt.Sprintf("dptune tune --tuner %s → %s", f.Tuner, f.Out)
	}
	spec, err := f.Spec(func() (job.Source, error) { return f.data.source(cmd) })
	if err != nil {
		return err
	}
	w := cmd.ErrOrStderr()
	if f.Resume != "" {
		fmt.Fprintf(w, "resuming the tuning in %s: its finished runs are given back from %s, the others run as they would have\n", f.Out, spec.Checkpoint)
	}
	spec.Warn = warner(w)
	b := &runsBar{w: w, tuner: spec.Tuner}
	spec.Progress = b.set
	var run runner.Runner
	end := func(bool) error { return nil }
	spec.OpenRunner = func(ctx context.Context) (runner.Runner, error) {
		var err error
		run, end, err = f.run.open(ctx, cmd, "tune", f.Out)
		return run, err
	}
	spec.Started = func(s job.TuneStart) { announceTune(w, f, spec, s, run) }
	rel, diag, err := job.Tune(cmd.Context(), spec)
	err = errors.Join(err, end(errors.Is(err, context.Canceled)))
	b.close()
	if rel == nil {
		return err
	}
	return saveTune(cmd, f, spec, rel, diag, err, start)
}

// runsBar shows a tuning's number of runs K (or its part runs): it is for
// the curator's eyes, on the terminal, and never in the report. The bar
// appears at the first run.
type runsBar struct {
	w     io.Writer
	tuner string
	b     *bar
}

// set shows run of runs.
func (r *runsBar) set(run, runs int) {
	if r.b == nil {
		desc := "tuning runs (curator-side, not private)"
		if t, ok := job.TunerInfoOf(r.tuner); ok && t.Partitioned {
			desc = "part runs"
		}
		r.b = newPhaseBar(r.w, runs, desc)
	}
	r.b.Set(run)
}

// close closes the bar, if it appeared.
func (r *runsBar) close() {
	if r.b != nil {
		r.b.Close()
	}
}

// announceTune says what the tuning s of spec is about to do, before its
// first run, on w: the baseline it must beat, its candidates, σ and budget,
// where its runs go, its final run and its tuning subset.
func announceTune(w io.Writer, f tuneFlags, spec job.TuneSpec, s job.TuneStart, run runner.Runner) {
	if spec.Seed != nil {
		warnSeeded(w)
	}
	if b, ok := spec.Baseline(); ok {
		// What the user would do instead of tuning, said before the
		// first run.
		fmt.Fprintf(w, "baseline       one run of %s's published settings at the same ε is what tuning must beat: %s (batch %d, %d epochs, η = %g, C = %g; %s)\n",
			b.Network, b.Command, b.BatchSize, b.Epochs, b.LearningRate, b.ClipNorm, b.Source)
	}
	fmt.Fprintf(w, "tuning %s with %s over %s (%d candidates), each run at σ = %.4f; total budget ε = %g, δ = %g; runs in %s\n",
		f.Dataset, s.Tuner, spec.Space.Name, s.Candidates, s.NoiseMultiplier, f.Epsilon, f.Delta, describeRunner(run))
	if s.FinalNoiseMultiplier > 0 {
		fmt.Fprintf(w, "final run      the selected hyperparameters, trained once on the whole training set at σ = %.4f (selection share %g of ε)\n", s.FinalNoiseMultiplier, s.SelectionShare)
	}
	if s.Subsample != 0 {
		fmt.Fprintf(w, "tuning subset  every run of the selection trains on one secret Poisson subsample of ratio %g (its ε amplified as one mechanism); carried over: %s\n", s.Subsample, tuning.SubsampleRule)
	}
}

// saveTune saves the release of a tuning (rel, diag, and err, the
// tuning's error) in --out with its pages, writes --diagnostics and prints
// the report; a failed tuning saves its ledger alone. The results are
// printed whatever became of the files: the privacy is spent.
func saveTune(cmd *cobra.Command, f tuneFlags, spec job.TuneSpec, rel *job.Release, diag *job.NotPrivateDiagnostics, err error, start time.Time) error {
	w := cmd.ErrOrStderr()
	saveErr := rel.Save(f.Out)
	tuningPages(w, f, spec, saveErr, diag)
	if rel.Failed {
		if saveErr != nil {
			return errors.Join(err, fmt.Errorf("--out %s: failed-report.json could not be written: %w", f.Out, saveErr))
		}
		return fmt.Errorf("%w (nothing released; the ledger is in %s/failed-report.json)", err, f.Out)
	}
	var derr error
	if f.Diagnostics != "" && diag != nil {
		derr = diag.WriteDiagnostics(f.Diagnostics)
	}
	if p, ok := rel.Report.(interface{ PrintSummary(io.Writer) }); ok {
		p.PrintSummary(cmd.OutOrStdout())
	}
	fmt.Fprintf(w, "wall time      %.1f s (curator-side: it grows with the number of runs, so it is not in the report)\n", time.Since(start).Seconds())
	if saveErr == nil && derr == nil {
		return err
	}
	if saveErr != nil {
		if f.Budget != "" {
			fmt.Fprintf(w, "spent          the ε above, charged to %s (dptune budget show %s)\n", f.Budget, f.Budget)
		}
		saveErr = fmt.Errorf("--out %s: the release could not be saved, and no partial file is left: %w", f.Out, saveErr)
	}
	if derr != nil {
		derr = fmt.Errorf("--diagnostics: %w", derr)
	}
	return errors.Join(err, saveErr, derr)
}

// warnSeeded tells the user that a seeded run's noise can be recomputed from
// the seed.
func warnSeeded(w io.Writer) {
	fmt.Fprintln(w, "note: --seed makes every draw (runs, noise, splits) recomputable from the seed, with fast noise; the guarantee holds only while the seed stays secret. It is not written to any report.")
}
