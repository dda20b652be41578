package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/bench"
	"github.com/dptune/dptune/job"
)

type benchSeedsFlags struct {
	data                           dataFlags
	models                         []string
	epsilon, delta                 float64
	seeds                          int
	out                            string
	clipping                       string
	autoClipGamma                  float64
	defaultSettings, defaultSource string
}

func newBenchSeedsCmd() *cobra.Command {
	var f benchSeedsFlags
	cmd := &cobra.Command{
		Use:   "seeds",
		Short: "Train networks at their published settings over seeds: the accuracy a paper's table reports, measured",
		Long: `seeds trains each --models network once per seed (seeds 1, 2, …) by DP-SGD at
--epsilon and --delta with the network's own published settings on the
dataset (the settings dptune train takes for the flags not given, with their
source), and reports each network's test accuracy per seed and their mean with
a 95% Student-t interval. Finished runs are cached in --out/runs, so a rerun
resumes. It writes seeds.json and seeds.md to --out, which dptune bench
report reads.

--clipping automatic trains every run with automatic clipping (Bu et al.
2023, AUTO-S, as dptune train --clipping automatic): no clipping norm, and
each network's published learning rate η at its clipping norm C taken as
η·C. Its runs are cached apart from flat clipping's.

--default-settings (with --default-source) gives every --models network
those settings in place of its published ones: for a network, such as a
JSON file's, that has none on the dataset.`,
		Example: `  dptune bench seeds --dataset fashion-mnist --models scatter-gn-linear-mnist,tb-mnist --epsilon 3 --seeds 3 --out out/seeds
  dptune bench seeds --dataset mnist --models scatter-gn-linear-mnist --clipping automatic --epsilon 3 --out out/autoclip-seeds`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchSeeds(cmd, f) },
	}
	fl := cmd.Flags()
	addDataFlags(fl, &f.data)
	fl.StringSliceVar(&f.models, "models", nil, "built-in networks with published settings on the dataset (required)")
	fl.Float64Var(&f.epsilon, "epsilon", 3, "ε in nats of each run")
	fl.Float64Var(&f.delta, "delta", 1e-5, "δ of each run")
	fl.IntVar(&f.seeds, "seeds", 3, "runs per network (seeds 1, 2, …)")
	fl.StringVar(&f.clipping, "clipping", "flat", "per-example clipping of every run: flat (to the network's published clipping norm C) or automatic (g/(‖g‖ + γ), no clipping norm, the published η at C taken as η·C; Bu et al. 2023, AUTO-S)")
	fl.Float64Var(&f.autoClipGamma, "auto-clip-gamma", job.DefaultAutoClipGamma, "stability constant γ > 0 of --clipping automatic")
	fl.StringVar(&f.defaultSettings, "default-settings", "", "the settings of every --models network in place of its published ones, e.g. batch_size=4096,epochs=40,learning_rate=8,momentum=0.9,clip_norm=0.1 (for a network without published settings on the dataset)")
	fl.StringVar(&f.defaultSource, "default-source", "", "where --default-settings come from, for the report (required with it)")
	fl.StringVar(&f.out, "out", "out/bench-seeds", "directory for seeds.json, seeds.md and the cache")
	return cmd
}

func runBenchSeeds(cmd *cobra.Command, f benchSeedsFlags) error {
	switch {
	case len(f.models) == 0:
		return usagef("--models names no network")
	case f.seeds < 1 || f.seeds > 1000:
		return usagef("--seeds %d is outside [1, 1000]", f.seeds)
	case cmd.Flags().Changed("model"):
		return usagef("give the networks with --models")
	case cmd.Flags().Changed("budget"):
		return usagef("--budget: a benchmark is not a release; it charges no budget file")
	}
	if err := checkClippingFlags(cmd, f.clipping, f.autoClipGamma, false); err != nil {
		return err
	}
	clipping, _, gamma := clippingOf(f.clipping, 0, f.autoClipGamma)
	if err := job.CheckEpsilon(f.epsilon); err != nil {
		return usagef("--epsilon: %v", err)
	}
	if err := job.CheckDelta(f.delta); err != nil {
		return usagef("--delta: %v", err)
	}
	def, err := job.ParseTrainDefaults(f.defaultSettings, f.defaultSource)
	if err != nil {
		return err
	}
	base, err := f.data.source(cmd)
	if err != nil {
		return err
	}
	var sources []job.Source
	for _, m := range f.models {
		src, err := withModel(base, m)
		if err != nil {
			return err
		}
		if _, ok := job.NetworkDefaultsOn(src.Arch.Spec, src.Name); !ok && def == nil {
			return usagef("--models: %s has no published settings on %s (give them with --default-settings and --default-source)", m, src.Name)
		}
		sources = append(sources, src)
	}
	if err := job.CheckOut(f.out); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	seeds := make([]uint64, f.seeds)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	w := cmd.ErrOrStderr()
	start := time.Now()
	rep, err := bench.Seeds(cmd.Context(), bench.SeedsConfig{Sources: sources, Epsilon: f.epsilon, Delta: f.delta, Seeds: seeds, Dir: f.out,
		Clipping: clipping, AutoClipGamma: gamma, Default: def, Progress: func(s string) { fmt.Fprintf(w, "[%s] %s\n", time.Since(start).Round(time.Second), s) }})
	if err != nil {
		return err
	}
	rep.Command = commandLine()
	if err := rep.Save(f.out); err != nil {
		return err
	}
	var md strings.Builder
	bench.WriteSeedsMarkdown(&md, rep)
	if err := os.WriteFile(filepath.Join(f.out, "seeds.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprint(cmd.OutOrStdout(), md.String())
	fmt.Fprintf(w, "wall time %.0f s (%d runs from the cache); seeds.json and seeds.md in %s\n", rep.Wall, rep.Cached, f.out)
	return nil
}
