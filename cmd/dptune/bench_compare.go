package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/bench"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/runner"
)

type benchCompareFlags struct {
	data                        dataFlags
	space, out                  string
	tuners                      []string
	budgets                     []float64
	delta, meanRuns, score      float64
	momentum                    float64
	gridScore                   float64
	seeds, lrStride, clipStride int
	epochs, batchSize, valSize  int
	options                     map[string]any // *int, *float64, *bool or *string by bench.CompareOptions name
	vote                        bool
	voteSubset, voteReps        int
	trainSubset, devSplit       int
	baselines                   bool
	referenceSeeds              int
	references                  bool
	defaultSettings             string
	defaultSource               string
	costSitting                 bool
	clipping                    string
	autoClipGamma               float64
	includeDefault              bool
	defaultWeight, share        float64
	subsample                   float64
	run                         runnerFlags
}

func newBenchCompareCmd() *cobra.Command {
	var f benchCompareFlags
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "every private tuner at the same total (ε, δ) on real data: " + strings.Join(compareEntryIDList(), ", ") + ", and DP-Hype in its own table",
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
	fl.Float64SliceVar(&f.budgets, "epsilon", []float64{1, 2, 4, 8}, "total ε in nats of tuning and release (one or more)")
	fl.Float64Var(&f.delta, "delta", 1e-5, "total δ")
	fl.StringSliceVar(&f.tuners, "tuners", compareEntryIDList(), "central tuners compared")
	fl.StringVar(&f.space, "space", "", "search space (default: scatter-<dataset> for a ScatterNet network, else the dataset's DP-HyPO grid)")
	fl.IntVar(&f.lrStride, "lr-stride", 2, "keep every n-th learning rate of the space")
	fl.IntVar(&f.clipStride, "clip-stride", 5, "keep every n-th clipping norm of the space")
	fl.IntVar(&f.seeds, "seeds", 3, "tunings per tuner and budget (seeds 1, 2, …)")
	fl.IntVar(&f.epochs, "epochs", 1, "epochs of each DP-SGD run on the full training set")
	fl.IntVar(&f.batchSize, "batch-size", 256, "expected batch size of each run")
	fl.Float64Var(&f.momentum, "momentum", 0, "SGD momentum of each run")
	fl.Float64Var(&f.meanRuns, "mean-runs", 10, "E[K] of random-stop (geometric TNB or Poisson) and GP (geometric TNB)")
	fl.IntVar(&f.valSize, "val-size", 5000, "private validation examples held out of the training set")
	fl.Float64Var(&f.score, "score-noise", 20, "noise multiplier of a private score (discrete Gaussian on the count)")
	fl.Float64Var(&f.gridScore, "grid-score-noise", 100, "grid's score noise multiplier (its |S| scores all compose)")
	f.options = addCompareOptionFlags(fl)
	fl.IntVar(&f.devSplit, "dev-split", 0, "hold out about n training examples (kept by a public hash of each example) as the test set, train on the rest (nominal size less n), and never read the real test set: a development comparison, for choosing settings without the test set; 0: the real test set")
	fl.IntVar(&f.trainSubset, "train-subset", 0, "train the central tuners' runs on a fixed subset of about n training examples (kept by a hash of each example; nominal size n), to fit a slow dataset in time; 0: the full set (DP-Hype deals --vote-subset of the full set)")
	fl.BoolVar(&f.vote, job.Vote, true, "also run DP-Hype at the same budgets, in its own table")
	fl.IntVar(&f.voteSubset, "vote-subset", 12000, "DP-Hype: training examples split among its 10 clients (a fixed public subset; 0: all)")
	fl.IntVar(&f.voteReps, "vote-reps", 1000, fmt.Sprintf("DP-Hype: votes per seed and budget (the vote's noise only), 1 to %d", bench.MaxVoteReps))
	fl.BoolVar(&f.baselines, "baselines", true, "also run the baselines at every budget and seed: the default (one private run of published settings at the whole ε), and, NOT PRIVATE, the best candidate on clean validation scores and the oracle best, each candidate trained at the whole ε; skipped with a note when the network has no published settings and no --default-settings")
	fl.BoolVar(&f.references, "references", true, "with --baselines: run the two not-private baselines (every candidate at every budget); --references=false runs only the default row")
	fl.IntVar(&f.referenceSeeds, "reference-seeds", 0, "run the two not-private baselines (every candidate at every budget) on the first n seeds only; 0: every seed")
	fl.StringVar(&f.defaultSettings, "default-settings", "", "the default baseline's settings, e.g. batch_size=4096,epochs=40,learning_rate=8,momentum=0.9,clip_norm=0.1 (default: the network's published settings on the dataset)")
	fl.StringVar(&f.defaultSource, "default-source", "", "where --default-settings come from, for the report (required with it)")
	fl.BoolVar(&f.costSitting, "cost-sitting", false, "time every tuning in this sitting (run it with nothing else on the machine): read nothing from --out's cache (every tuning and baseline runs; the doubling tuner's part-score cache there is removed first), and mark compare.json so that bench report shows it as what each tuner costs in wall and CPU seconds, not as a comparison")
	fl.StringVar(&f.clipping, "clipping", "flat", "every tuner's and the default's per-example clipping: flat or automatic (g/(‖g‖ + γ), no clipping norm, so none in the space, and a published η at C as η·C; Bu et al. 2023, AUTO-S)")
	fl.Float64Var(&f.autoClipGamma, "auto-clip-gamma", job.DefaultAutoClipGamma, "stability constant γ > 0 of --clipping automatic")
	fl.BoolVar(&f.includeDefault, "include-default", false, "every tuner puts the default settings (--default-settings, or the network's published settings) among its candidates; a tuner that cannot (gp) is reported not run")
	fl.Float64Var(&f.defaultWeight, "default-weight", 0.25, "randomstop with --include-default: the probability w ∈ (0, 1) that each run trains the default")
	fl.Float64Var(&f.subsample, "subsample", 0, "with --selection-share: every selection runs on a secret Poisson subsample of ratio q ∈ (0, 1] of the training set (Koskela & Kulkarni 2023) and the chosen settings train the final run on the whole set (default: none)")
	fl.Float64Var(&f.share, "selection-share", 0, "every tuner spends a share s ∈ (0, 1) of ε on the selection, and one final run of the chosen settings, calibrated alone to (1 − s)·ε, is the released model; a tuner that trains its own final run (doubling) is reported not run (default: no final run)")
	fl.StringVar(&f.out, "out", "out/bench-compare", "directory for compare.json, compare.md, the plot and the cache")
	return cmd
}

// defaultTrain reads --default-settings and --default-source: nil when
// not given. Every one of the five settings is required.
func (f benchCompareFlags) defaultTrain() (*job.TrainDefaults, error) {
	return parseDefaultSettings(f.defaultSettings, f.defaultSource)
}

// parseDefaultSettings reads --default-settings and --default-source (of
// bench compare or tune): nil when not given. Every one of the five
// settings is required.
func parseDefaultSettings(settings, source string) (*job.TrainDefaults, error) {
	if settings == "" {
		if source != "" {
			return nil, usagef("--default-source needs --default-settings")
		}
		return nil, nil
	}
	if source == "" {
		return nil, usagef("--default-settings needs --default-source: say where the settings come from")
	}
	d := job.TrainDefaults{Source: source}
	seen := map[string]bool{}
	for _, kv := range strings.Split(settings, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, usagef("--default-settings: %q is not name=number", kv)
		}
		integer := func() (int, error) {
			if x != math.Trunc(x) || x < 1 || x > math.MaxInt32 {
				return 0, usagef("--default-settings: %s = %v is not a positive integer", k, v)
			}
			return int(x), nil
		}
		switch k {
		case job.BatchSize:
			d.BatchSize, err = integer()
		case job.Epochs:
			d.Epochs, err = integer()
		case job.LearningRate:
			d.LearningRate = x
		case job.Momentum:
			d.Momentum = x
		case job.ClipNorm:
			d.ClipNorm = x
		default:
			return nil, usagef("--default-settings: unknown setting %q (want %s, %s, %s, %s and %s)", k, job.BatchSize, job.Epochs, job.LearningRate, job.Momentum, job.ClipNorm)
		}
		if err != nil {
			return nil, err
		}
		seen[k] = true
	}
	if len(seen) != 5 {
		return nil, usagef("--default-settings needs all of %s, %s, %s, %s and %s", job.BatchSize, job.Epochs, job.LearningRate, job.Momentum, job.ClipNorm)
	}
	return &d, nil
}

// compareSubsetKey keys --train-subset's hash. It is public (membership is
// a function of each example) and fixed, so every seed, tuner and rerun
// trains on the same subset.
const compareSubsetKey = 1

func runBenchCompare(cmd *cobra.Command, f benchCompareFlags) error {
	cfg, whole, err := f.config(cmd)
	if err != nil {
		return err
	}
	src, space, entries, seeds := cfg.Data, cfg.Space, cfg.Entries, cfg.Seeds
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
	if f.baselines && !cfg.Baselines {
		fmt.Fprintf(w, "note: no baselines: %s has no published settings on %s (give --default-settings and --default-source)\n", src.Arch.Spec.Name, src.Name)
	}
	if err := os.MkdirAll(f.out, 0o755); err != nil {
		return err
	}
	run, end, err := f.run.open(cmd.Context(), cmd, "bench compare", f.out)
	if err != nil {
		return err
	}
	if run == nil {
		run = runner.Local{} // one run per core, each engine on its share
	}
	cfg.Runner = run
	start := time.Now()
	fmt.Fprintf(w, "comparing %d tuners × %d budgets × %d seeds on %s (%s, %d candidates of %s), runs in %s; cache %s\n",
		len(entries), len(f.budgets), f.seeds, src.Name, src.Arch.Spec.Name, space.Size(), space.Name, describeRunner(run), filepath.Join(f.out, "runs"))
	if cfg.CostSitting {
		fmt.Fprintf(w, "cost sitting: every tuning runs and is timed now, none read from the cache; load average %s (keep the machine otherwise idle)\n", bench.LoadAvg())
	}
	b := &stageBar{w: w, start: start}
	cfg.Progress, cfg.RunProgress = b.stage, b.set
	rep, err := bench.Compare(cmd.Context(), cfg)
	// The invocation is closed (or left to resume) before anything is
	// written; an error closing it is returned once the results are out.
	closeErr := end(errors.Is(err, context.Canceled))
	if err != nil {
		err = errors.Join(err, closeErr)
	}
	b.close()
	if err != nil {
		return err
	}
	if err := f.compareVote(cmd, rep, whole, seeds, cfg.Progress); err != nil {
		return errors.Join(err, closeErr)
	}
	rep.Command = commandLine()
	rep.Wall = time.Since(start).Seconds()
	if err := writeCompare(cmd.OutOrStdout(), f.out, rep, src.Name); err != nil {
		return errors.Join(err, closeErr)
	}
	fmt.Fprintf(w, "wall time %.0f s (%d tunings from the cache); compare.json, compare.md and the plot in %s\n", rep.Wall, rep.Cached, f.out)
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

// compareVote adds DP-Hype's table to rep when --vote asks for it: run on
// whole (dealt among its clients) at every budget and seed, or the reason
// it is not run under the comparison-wide options given.
func (f benchCompareFlags) compareVote(cmd *cobra.Command, rep *bench.CompareReport, whole job.Source, seeds []uint64, progress func(string)) error {
	if !f.vote {
		return nil
	}
	w := cmd.ErrOrStderr()
	if why := f.voteNotRun(); why != "" {
		rep.VoteNotRun = why
		fmt.Fprintf(w, "DP-Hype not run: %s\n", why)
		return nil
	}
	vc := bench.VoteRealConfig{Source: whole, Subset: f.voteSubset, AlphaClients: 10, Delta: f.delta, VotesPerClient: 1, LocalEpochs: 1,
		BatchSize: 64, Rounds: 3, ClipNorm: 1, Reps: f.voteReps, CacheDir: filepath.Join(f.out, job.Vote),
		Progress: stagedProgressTo(w)}
	var err error
	rep.Vote, err = bench.CompareVote(cmd.Context(), vc, f.budgets, seeds, progress)
	return err
}

// writeCompare saves the comparison rep in dir (compare.json, compare.md
// and the plots of the dataset called name), printing compare.md to out.
func writeCompare(out io.Writer, dir string, rep *bench.CompareReport, name string) error {
	if err := rep.Save(dir); err != nil {
		return err
	}
	var md strings.Builder
	bench.WriteCompareMarkdown(&md, rep)
	if err := os.WriteFile(filepath.Join(dir, "compare.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprint(out, md.String())
	if err := bench.PlotCompare(rep, filepath.Join(dir, "compare-"+name+".png")); err != nil {
		return err
	}
	return bench.PlotVersus(rep, filepath.Join(dir, "versus-default-"+name+".png"))
}

// config checks the flags and returns the comparison's settings, and the
// whole training set (before --train-subset) for DP-Hype's table.
func (f benchCompareFlags) config(cmd *cobra.Command) (cfg bench.CompareConfig, whole job.Source, err error) {
	src, whole, err := f.sources(cmd)
	if err != nil {
		return cfg, whole, err
	}
	if err := f.checkRanges(src.NominalN); err != nil {
		return cfg, whole, err
	}
	options, err := f.optionValues()
	if err != nil {
		return cfg, whole, err
	}
	if err := f.checkBudgets(); err != nil {
		return cfg, whole, err
	}
	entries, err := f.entries()
	if err != nil {
		return cfg, whole, err
	}
	name := f.space
	if name == "" {
		name = job.DefaultSpaceName(src)
	}
	full, err := loadSpace(name, f.data.dataset)
	if err != nil {
		return cfg, whole, usageError{err}
	}
	if f.space == "" && f.clipping == "automatic" {
		// Automatic clipping has no clipping norm to choose, as for tune; a
		// --space given with one is refused by the job.
		full = job.WithoutClipNorm(full)
	}
	space := bench.Subgrid(full, map[string]int{job.LearningRate: f.lrStride, job.ClipNorm: f.clipStride})
	q := float64(f.batchSize) / float64(src.NominalN-f.valSize)
	if err := job.CheckEpochs(f.epochs, q); err != nil {
		return cfg, whole, usagef("--epochs %d: %v", f.epochs, err)
	}
	if err := job.CheckOut(f.out); err != nil {
		return cfg, whole, fmt.Errorf("--out: %w", err)
	}
	if err := f.run.check(cmd); err != nil {
		return cfg, whole, err
	}
	seeds := make([]uint64, f.seeds)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	def, err := f.defaultTrain()
	if err != nil {
		return cfg, whole, err
	}
	cfg = bench.CompareConfig{Data: src, Space: space, Entries: entries, Budgets: f.budgets, Delta: f.delta, Seeds: seeds,
		Epochs: f.epochs, BatchSize: f.batchSize, Momentum: f.momentum, MeanRuns: f.meanRuns, ValSize: f.valSize, ScoreNoise: f.score, GridScoreNoise: f.gridScore,
		Options: options, Dir: f.out, Baselines: f.baselines, Default: def, ReferenceSeeds: f.referenceSeeds, NoReferences: !f.references, CostSitting: f.costSitting}
	cfg.Clipping, _, cfg.AutoClipGamma = clippingOf(f.clipping, 0, f.autoClipGamma)
	cfg.IncludeDefault, cfg.SelectionShare, cfg.Subsample = f.includeDefault, f.share, f.subsample
	if f.includeDefault {
		cfg.DefaultWeight = f.defaultWeight
	}
	if f.referenceSeeds < 0 || f.referenceSeeds > f.seeds {
		return cfg, whole, usagef("--reference-seeds %d is outside [0, --seeds %d]", f.referenceSeeds, f.seeds)
	}
	if _, ok := job.NetworkDefaultsOn(src.Arch.Spec, src.Name); f.baselines && def == nil && !ok {
		if cmd.Flags().Changed("baselines") {
			return cfg, whole, usagef("--baselines: %s has no published settings on %s: give them with --default-settings and --default-source", src.Arch.Spec.Name, src.Name)
		}
		cfg.Baselines = false
	}
	return cfg, whole, nil
}

// sources reads the data flags, refusing --budget and the
// comparison-wide options' bad values first: src is the training set the
// tunings run on (a --train-subset or --dev-split of the dataset), whole
// the one DP-Hype's table deals among its clients. A built-in ScatterNet
// network's own settings stand for the flags not given, as for tune.
func (f *benchCompareFlags) sources(cmd *cobra.Command) (src, whole job.Source, err error) {
	if src, err = f.data.source(cmd); err != nil {
		return src, whole, err
	}
	if cmd.Flags().Changed("budget") {
		return src, whole, usagef("--budget: a benchmark is not a release; it charges no budget file")
	}
	if err := f.checkWide(cmd); err != nil {
		return src, whole, err
	}
	runDefaults(cmd, src, &f.epochs, &f.batchSize, &f.momentum)
	whole = src // DP-Hype's table deals its own --vote-subset among clients
	if f.trainSubset != 0 && f.devSplit != 0 {
		return src, whole, usagef("--dev-split and --train-subset cannot be combined")
	}
	if f.trainSubset != 0 {
		if src, err = src.WithSubset(f.trainSubset, compareSubsetKey); err != nil {
			return src, whole, usagef("--train-subset: %v", err)
		}
	}
	if f.devSplit != 0 {
		if src, err = src.WithDevSplit(f.devSplit, compareSubsetKey); err != nil {
			return src, whole, usagef("--dev-split: %v", err)
		}
		whole = src
	}
	return src, whole, nil
}

// checkRanges refuses counts and sizes out of range, n being the nominal
// size of the training set the tunings run on.
func (f benchCompareFlags) checkRanges(n int) error {
	switch {
	case f.seeds < 1 || f.seeds > 1000:
		return usagef("--seeds %d is outside [1, 1000]", f.seeds)
	case f.lrStride < 1 || f.clipStride < 1:
		return usagef("--lr-stride and --clip-stride must be at least 1")
	case !(f.momentum >= 0 && f.momentum < 1):
		return usagef("--momentum %v is outside [0, 1)", f.momentum)
	case f.epochs < 1:
		return usagef("--epochs and --part-epochs must be at least 1")
	case f.valSize < 1 || f.valSize >= n:
		return usagef("--val-size %d must be at least 1 and below the nominal training-set size %d (the runs train on the rest)", f.valSize, n)
	case f.batchSize < 1 || f.batchSize > n-f.valSize:
		return usagef("--batch-size %d is outside [1, %d], the nominal size %d less --val-size %d", f.batchSize, n-f.valSize, n, f.valSize)
	case !(f.meanRuns > 1) || math.IsInf(f.meanRuns, 1):
		return usagef("--mean-runs %v must be finite and above 1", f.meanRuns)
	case f.voteSubset < 0:
		return usagef("--vote-subset %d is negative", f.voteSubset)
	case bench.CheckVoteReps("--vote-reps", f.voteReps) != nil:
		return usagef("--vote-reps %d is outside [1, %d]", f.voteReps, bench.MaxVoteReps)
	case len(f.budgets) == 0:
		return usagef("--epsilon needs at least one budget")
	}
	return nil
}

// checkBudgets refuses an --epsilon or --delta that no tuning can take.
func (f benchCompareFlags) checkBudgets() error {
	for _, e := range f.budgets {
		if err := job.CheckEpsilon(e); err != nil {
			return usagef("--epsilon %v: %v", e, err)
		}
	}
	if err := job.CheckDelta(f.delta); err != nil {
		return usagef("--delta: %v", err)
	}
	return nil
}

// entries are the --tuners entries of the comparison.
func (f benchCompareFlags) entries() ([]bench.CompareEntry, error) {
	var entries []bench.CompareEntry
	for _, t := range f.tuners {
		i := slices.IndexFunc(bench.CompareEntries, func(e bench.CompareEntry) bool { return e.ID() == t })
		if i < 0 {
			return nil, usagef("unknown --tuners entry %q (want %s)", t, compareEntryIDs())
		}
		entries = append(entries, bench.CompareEntries[i])
	}
	return entries, nil
}

// checkWide refuses, before any work, the comparison-wide options' bad
// values: --clipping other than flat or automatic (and its γ), a
// --selection-share outside (0, 1), --default-weight outside (0, 1) or
// without --include-default.
func (f benchCompareFlags) checkWide(cmd *cobra.Command) error {
	ch := cmd.Flags().Changed
	if err := checkClippingFlags(cmd, f.clipping, f.autoClipGamma, false); err != nil {
		return err
	}
	switch {
	case ch("selection-share") && !(f.share > 0 && f.share < 1):
		return usagef("--selection-share %v is outside (0, 1)", f.share)
	case ch("subsample") && !(f.subsample > 0 && f.subsample <= 1):
		return usagef("--subsample %v is outside (0, 1]", f.subsample)
	case ch("subsample") && !ch("selection-share"):
		return usagef("--subsample needs --selection-share: the released model is the final run on the whole set")
	case ch("default-weight") && !f.includeDefault:
		return usagef("--default-weight needs --include-default")
	case f.includeDefault && !(f.defaultWeight > 0 && f.defaultWeight < 1):
		return usagef("--default-weight %v is outside (0, 1)", f.defaultWeight)
	}
	return nil
}

// voteNotRun is why DP-Hype's table is not run under the comparison-wide
// options given ("" when it runs): its clients train with flat clipping
// and it takes neither the default among its candidates nor a selection
// share.
func (f benchCompareFlags) voteNotRun() string {
	var opts []string
	if f.clipping == "automatic" {
		opts = append(opts, "--clipping automatic (its clients clip flat)")
	}
	if f.includeDefault {
		opts = append(opts, "--include-default")
	}
	if f.share != 0 {
		opts = append(opts, "--selection-share")
	}
	if f.subsample != 0 {
		opts = append(opts, "--subsample")
	}
	if len(opts) == 0 {
		return ""
	}
	return "the vote tuner takes none of " + strings.Join(opts, ", ")
}

// compareEntryIDList lists the --tuners entries.
func compareEntryIDList() []string {
	var ids []string
	for _, e := range bench.CompareEntries {
		ids = append(ids, e.ID())
	}
	return ids
}

// compareEntryIDs lists the --tuners entries as English ("a, b or c").
func compareEntryIDs() string {
	ids := compareEntryIDList()
	return strings.Join(ids[:len(ids)-1], ", ") + " or " + ids[len(ids)-1]
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

// optionValues returns the tuners' own settings from the flags, each
// checked.
func (f benchCompareFlags) optionValues() (map[string]any, error) {
	v := map[string]any{}
	for _, o := range bench.CompareOptions() {
		v[o.Name] = optionValue(f.options[o.Name])
		if o.Check != nil {
			if err := o.Check(v[o.Name]); err != nil {
				return nil, usageError{err}
			}
		}
	}
	return v, nil
}
