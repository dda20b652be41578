package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/bench"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
)

// benchSeedsFlags are bench seeds' flags: the request and the data.
type benchSeedsFlags struct {
	bench.SeedsRequest
	data dataFlags
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
	fl.StringSliceVar(&f.Models, "models", nil, "built-in networks with published settings on the dataset (required)")
	fl.Float64Var(&f.Epsilon, "epsilon", 3, "ε in nats of each run")
	fl.Float64Var(&f.Delta, "delta", 1e-5, "δ of each run")
	fl.IntVar(&f.Seeds, "seeds", 3, "runs per network (seeds 1, 2, …)")
	fl.StringVar(&f.Clipping.Rule, "clipping", "flat", "per-example clipping of every run: flat (to the network's published clipping norm C) or automatic (g/(‖g‖ + γ), no clipping norm, the published η at C taken as η·C; Bu et al. 2023, AUTO-S)")
	fl.Float64Var(&f.Clipping.Gamma, "auto-clip-gamma", dpsgd.DefaultAutoClipGamma, "stability constant γ > 0 of --clipping automatic")
	fl.StringVar(&f.DefaultSettings, "default-settings", "", "the settings of every --models network in place of its published ones, e.g. batch_size=4096,epochs=40,learning_rate=8,momentum=0.9,clip_norm=0.1 (for a network without published settings on the dataset)")
	fl.StringVar(&f.DefaultSource, "default-source", "", "where --default-settings come from, for the report (required with it)")
	fl.StringVar(&f.Out, "out", "out/bench-seeds", "directory for seeds.json, seeds.md and the cache")
	return cmd
}

func runBenchSeeds(cmd *cobra.Command, f benchSeedsFlags) error {
	f.Given = given(cmd)
	cfg, err := f.Config(func() (job.Source, error) { return f.data.source(cmd) })
	if err != nil {
		return err
	}
	w := cmd.ErrOrStderr()
	start := time.Now()
	cfg.Progress = func(s string) { fmt.Fprintf(w, "[%s] %s\n", time.Since(start).Round(time.Second), s) }
	rep, err := bench.Seeds(cmd.Context(), cfg)
	if err != nil {
		return err
	}
	rep.Command = commandLine()
	md, err := rep.WriteAll(f.Out)
	if err != nil {
		return err
	}
	fmt.Fprint(cmd.OutOrStdout(), md)
	fmt.Fprintf(w, "wall time %.0f s (%d runs from the cache); seeds.json and seeds.md in %s\n", rep.Wall, rep.Cached, f.Out)
	return nil
}
