package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/bench"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// benchCompareFlags are bench compare's flags: the request, its tuners'
// own options (pointers by bench.CompareOptions name), its data and runner.
type benchCompareFlags struct {
	bench.CompareRequest
	data    dataFlags
	options map[string]any
	run     runnerFlags
}

func newBenchCompareCmd() *cobra.Command {
	var f benchCompareFlags
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "every private tuner at the same total (ε, δ) on real data: " + strings.Join(bench.CompareEntryIDs(), ", ") + ", and DP-Hype in its own table",
		Long: `compare runs each central tuner of --tuners (by default every built-in one,
random-stop with TNB and with Poisson runs) at each total budget --epsilon
(tuning and the released model together, example-level, δ = --delta), each
calibrating its own noise to that same total, on the same search space, data,
validation split and run settings, for --seeds seeds. It records the
released model's test accuracy, the total ε by each accountant that applies,
the runs spent and the wall time, and writes compare.json, compare.md and a
plot to --out.

Every finished tuning is cached in --out/runs; a rerun with the same settings
(after Ctrl-C, say) skips them. With --vote, DP-Hype runs too, at the same
budgets, and gets its own table: its vote is client-level, on a split of the
data among clients, so it is not a row of the central tuners'.

Comparison-wide options apply to every tuner of --tuners, as dptune tune's
flags of the same names: --clipping automatic (every run, the default row's
included, clips automatically: no clipping norm, the space without its
clip_norm dimension, and a published η at C taken as η·C), --include-default
(the default settings — --default-settings or the published ones — among
the candidates, with --default-weight for randomstop) and --selection-share s
(the selection spends a share of ε; one final run of the chosen settings is
the released model). A tuner that refuses one (gp takes no default among its
candidates; doubling no selection share) is reported not run with the
reason, and so is DP-Hype. compare.json records the options; a comparison
without them reuses the cache of one made before they existed.

Runs use fast seeded noise (reproducible; a benchmark, not a release).`,
		Example: `  dptune bench compare --epsilon 1,2,4,8 --out out/bench-compare
  dptune bench compare --dataset cifar10 --data-dir DIR --model tb-cifar10 --epsilon 4 --out out/compare-cifar
  dptune bench compare --include-default --selection-share 0.25 --tuners grid,randomstop-tnb --out out/compare-split`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchCompare(cmd, f) },
	}
	fl := cmd.Flags()
	addDataFlags(fl, &f.data)
	addRunnerFlags(fl, &f.run)
	fl.Float64SliceVar(&f.Budgets, "epsilon", []float64{1, 2, 4, 8}, "total ε in nats of tuning and release (one or more)")
	fl.Float64Var(&f.Delta, "delta", 1e-5, "total δ")
	fl.StringSliceVar(&f.Tuners, "tuners", bench.CompareEntryIDs(), "central tuners compared")
	fl.StringVar(&f.Space, "space", "", "search space (default: scatter-<dataset> for a ScatterNet network, else the dataset's DP-HyPO grid)")
	fl.IntVar(&f.LRStride, "lr-stride", 2, "keep every n-th learning rate of the space")
	fl.IntVar(&f.ClipStride, "clip-stride", 5, "keep every n-th clipping norm of the space")
	fl.IntVar(&f.Seeds, "seeds", 3, "tunings per tuner and budget (seeds 1, 2, …)")
	fl.IntVar(&f.Epochs, "epochs", 1, "epochs of each DP-SGD run on the full training set")
	fl.IntVar(&f.BatchSize, "batch-size", 256, "expected batch size of each run")
	fl.Float64Var(&f.Momentum, "momentum", 0, "SGD momentum of each run")
	fl.Float64Var(&f.MeanRuns, "mean-runs", 10, "E[K] of random-stop (geometric TNB or Poisson) and GP (geometric TNB)")
	fl.IntVar(&f.ValSize, "val-size", 5000, "private validation examples held out of the training set")
	fl.Float64Var(&f.ScoreNoise, "score-noise", 20, "noise multiplier of a private score (discrete Gaussian on the count)")
	fl.Float64Var(&f.GridScoreNoise, "grid-score-noise", 100, "grid's score noise multiplier (its |S| scores all compose)")
	f.options = addCompareOptionFlags(fl)
	fl.IntVar(&f.DevSplit, "dev-split", 0, "hold out about n training examples (kept by a public hash of each example) as the test set, train on the rest (nominal size less n), and never read the real test set: a development comparison, for choosing settings without the test set; 0: the real test set")
	fl.IntVar(&f.TrainSubset, "train-subset", 0, "train the central tuners' runs on a fixed subset of about n training examples (kept by a hash of each example; nominal size n), to fit a slow dataset in time; 0: the full set (DP-Hype deals --vote-subset of the full set)")
	fl.BoolVar(&f.Vote, tuning.VoteName, true, "also run DP-Hype at the same budgets, in its own table")
	fl.IntVar(&f.VoteSubset, "vote-subset", 12000, "DP-Hype: training examples split among its 10 clients (a fixed public subset; 0: all)")
	fl.IntVar(&f.VoteReps, "vote-reps", 1000, fmt.Sprintf("DP-Hype: votes per seed and budget (the vote's noise only), 1 to %d", bench.MaxVoteReps))
	fl.BoolVar(&f.Baselines, "baselines", true, "also run the baselines at every budget and seed: the default (one private run of published settings at the whole ε), and, NOT PRIVATE, the best candidate on clean validation scores and the oracle best, each candidate trained at the whole ε; skipped with a note when the network has no published settings and no --default-settings")
	fl.BoolVar(&f.References, "references", true, "with --baselines: run the two not-private baselines (every candidate at every budget); --references=false runs only the default row")
	fl.IntVar(&f.ReferenceSeeds, "reference-seeds", 0, "run the two not-private baselines (every candidate at every budget) on the first n seeds only; 0: every seed")
	fl.StringVar(&f.DefaultSettings, "default-settings", "", "the default baseline's settings, e.g. batch_size=4096,epochs=40,learning_rate=8,momentum=0.9,clip_norm=0.1 (default: the network's published settings on the dataset)")
	fl.StringVar(&f.DefaultSource, "default-source", "", "where --default-settings come from, for the report (required with it)")
	fl.StringVar(&f.DefaultLabel, "default-label", "", "with --default-settings: a few words naming a default that is not the network's published settings, shown beside the dataset wherever the report names this comparison (e.g. \"mis-set: η 8× too small\"); changes no run")
	fl.BoolVar(&f.CostSitting, "cost-sitting", false, "time every tuning in this sitting (run it with nothing else on the machine): read nothing from --out's cache (every tuning and baseline runs; the doubling tuner's part-score cache there is removed first), and mark compare.json so that bench report shows it as what each tuner costs in wall and CPU seconds, not as a comparison")
	fl.StringVar(&f.Clipping.Rule, "clipping", "flat", "every tuner's and the default's per-example clipping: flat or automatic (g/(‖g‖ + γ), no clipping norm, so none in the space, and a published η at C as η·C; Bu et al. 2023, AUTO-S)")
	fl.Float64Var(&f.Clipping.Gamma, "auto-clip-gamma", dpsgd.DefaultAutoClipGamma, "stability constant γ > 0 of --clipping automatic")
	fl.BoolVar(&f.IncludeDefault, "include-default", false, "every tuner puts the default settings (--default-settings, or the network's published settings) among its candidates; a tuner that cannot (gp) is reported not run")
	fl.Float64Var(&f.DefaultWeight, "default-weight", 0.25, "randomstop with --include-default: the probability w ∈ (0, 1) that each run trains the default")
	fl.Float64Var(&f.Subsample, "subsample", 0, "with --selection-share: every selection runs on a secret Poisson subsample of ratio q ∈ (0, 1] of the training set (Koskela & Kulkarni 2023) and the chosen settings train the final run on the whole set (default: none)")
	fl.Float64Var(&f.SelectionShare, "selection-share", 0, "every tuner spends a share s ∈ (0, 1) of ε on the selection, and one final run of the chosen settings, calibrated alone to (1 − s)·ε, is the released model; a tuner that trains its own final run (doubling) is reported not run (default: no final run)")
	fl.StringVar(&f.Out, "out", "out/bench-compare", "directory for compare.json, compare.md, the plot and the cache")
	return cmd
}

func runBenchCompare(cmd *cobra.Command, f benchCompareFlags) error {
	src, err := f.data.source(cmd)
	if err != nil {
		return err
	}
	f.Given, f.Options = given(cmd), optionValues(f.options)
	cfg, whole, err := f.Config(cmd.Context(), src)
	if err != nil {
		return err
	}
	if err := f.run.check(cmd); err != nil {
		return err
	}
	infeasible, err := bench.CheckCompare(cmd.Context(), cfg)
	if err != nil {
		return usageError{err}
	}
	w := cmd.ErrOrStderr()
	printed := map[string]bool{}
	for _, x := range infeasible {
		if !printed[x.Reason] { // a refused option's reason is every budget's
			fmt.Fprintf(w, "infeasible, reported not run: %s\n", x.Reason)
			printed[x.Reason] = true
		}
	}
	if f.Baselines && !cfg.Baselines {
		fmt.Fprintf(w, "note: no baselines: %s has no published settings on %s (give --default-settings and --default-source)\n", src.Arch.Spec.Name, src.Name)
	}
	run, end, err := f.run.open(cmd.Context(), cmd, "bench compare", f.Out)
	if err != nil {
		return err
	}
	if run == nil {
		run = runner.Local{} // one run per core, each engine on its share
	}
	cfg.Runner = run
	start := time.Now()
	fmt.Fprintf(w, "comparing %d tuners × %d budgets × %d seeds on %s (%s, %d candidates of %s), runs in %s; cache %s\n",
		len(cfg.Entries), len(f.Budgets), f.Seeds, src.Name, src.Arch.Spec.Name, cfg.Space.Size(), cfg.Space.Name, describeRunner(run), filepath.Join(f.Out, "runs"))
	if cfg.CostSitting {
		fmt.Fprintf(w, "cost sitting: every tuning runs and is timed now, none read from the cache; load average %s (keep the machine otherwise idle)\n", bench.LoadAvg())
	}
	b := &stageBar{w: w, start: start}
	cfg.Progress, cfg.RunProgress = b.stage, b.set
	rep, err := bench.Compare(cmd.Context(), cfg)
	// The invocation is closed (or left to resume) before anything is
	// written; an error closing it is returned once the results are out.
	closeErr := end(errors.Is(err, context.Canceled))
	b.close()
	if err != nil {
		return errors.Join(err, closeErr)
	}
	why, err := f.AddVote(cmd.Context(), rep, whole, cfg.Progress, stagedProgressTo(w))
	if why != "" {
		fmt.Fprintf(w, "DP-Hype not run: %s\n", why)
	}
	if err != nil {
		return errors.Join(err, closeErr)
	}
	rep.Command = commandLine()
	rep.Wall = time.Since(start).Seconds()
	md, err := rep.WriteAll(f.Out, src.Name)
	fmt.Fprint(cmd.OutOrStdout(), md)
	if err != nil {
		return errors.Join(err, closeErr)
	}
	fmt.Fprintf(w, "wall time %.0f s (%d tunings from the cache); compare.json, compare.md and the plot in %s\n", rep.Wall, rep.Cached, f.Out)
	return closeErr
}

// stageBar shows a comparison's stages as lines timed from start, and the
// runs of the stage under way on a bar (curator-side) that appears at its
// first run.
type stageBar struct {
	w       io.Writer
	start   time.Time
	b       *bar
	current string
}

// stage closes the bar of the stage before s and announces s.
func (s *stageBar) stage(name string) {
	s.close()
	s.current = name
	fmt.Fprintf(s.w, "[%s] %s\n", time.Since(s.start).Round(time.Second), name)
}

// set shows run r of runs of the stage under way.
func (s *stageBar) set(r, runs int) {
	if s.b == nil {
		s.b = newPhaseBar(s.w, runs, s.current+" (curator-side)")
	}
	s.b.Set(r)
}

// close closes the bar, if one is shown.
func (s *stageBar) close() {
	if s.b != nil {
		s.b.Close()
		s.b = nil
	}
}

// addCompareOptionFlags registers the tuners' own settings a comparison
// takes (bench.CompareOptions) on fl, each help line led by its tuner's
// name.
func addCompareOptionFlags(fl *pflag.FlagSet) map[string]any {
	flags := map[string]any{}
	for _, o := range bench.CompareOptions() {
		flags[o.Name] = addOptionFlag(fl, o.Tuner, o.Name, o.Default, o.Help)
	}
	return flags
}
