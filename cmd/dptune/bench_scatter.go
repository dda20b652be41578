package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/bench"
	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/job"
)

func newBenchScatterCmd() *cobra.Command {
	var f bench.ScatterRequest
	cmd := &cobra.Command{
		Use:   "scatter",
		Short: "The scattering transform's throughput, and with --models one DP-SGD epoch of each ScatterNet network",
		Long: wrapText("scatter times the ScatterNet front end (kymatio's Scattering2D, J = 2, L = 8) on MNIST's 1×28×28 and"+
			" CIFAR-10's 3×32×32 images with one worker and with GOMAXPROCS workers, --seconds per row on random pixels (its cost"+
			" does not depend on them): images per second, CPU time per image and the time to build each dataset's feature cache at"+
			" that rate. With --models it also times one DP-SGD epoch (secure noise, the network's own settings) of each built-in"+
			" network with a scatter first layer on its dataset's cached features; a network whose cache is absent is skipped, never"+
			" built. It writes scatter.json, scatter.csv and scatter-epochs.csv to --out.", 77),
		Example: `  dptune bench scatter
  dptune bench scatter --models --data-dirs cifar10=data/cifar-10-batches-bin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchScatter(cmd, f) },
	}
	fl := cmd.Flags()
	fl.Float64Var(&f.Seconds, "seconds", 3, "measuring time of each throughput row")
	fl.BoolVar(&f.Models, "models", false, "also time one DP-SGD epoch of each built-in scatter network on its cached features")
	fl.StringToStringVar(&f.DataDirs, "data-dirs", nil, "with --models: dataset=directory of a dataset's files ("+data.NamesList()+"; default "+job.DefaultDirHelp()+")")
	fl.StringVar(&f.FeatureCache, "feature-cache", job.DefaultFeatureCache(), "with --models: the feature cache directory read (never written)")
	fl.StringVar(&f.Out, "out", "out/bench-scatter", "directory for scatter.json and the CSVs")
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of the random pixels, the initialisation and the sampling")
	return cmd
}

func runBenchScatter(cmd *cobra.Command, f bench.ScatterRequest) error {
	cfg, err := f.Config()
	if err != nil {
		return err
	}
	cfg.Progress = func(s string) { fmt.Fprintln(cmd.ErrOrStderr(), s) }
	rep, err := bench.Scatter(cmd.Context(), cfg)
	if len(rep.Rows) > 0 {
		printScatter(cmd.OutOrStdout(), rep)
		paths, werr := bench.WriteScatter(rep, f.Out)
		if werr != nil {
			return werr
		}
		fmt.Fprintln(cmd.OutOrStdout(), "\nwrote", paths)
	}
	return err
}

func printScatter(out io.Writer, rep bench.ScatterReport) {
	fmt.Fprintf(out, "scattering transform (J = %d, L = %d), %s, %.3g s per row, GOMAXPROCS %d, load average %s → %s\n\n",
		rep.J, rep.L, rep.Pixels, rep.Duration, rep.GOMAXPROCS, rep.LoadAvg[0], rep.LoadAvg[1])
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "dataset\timage\tworkers\timages/s\tCPU ms/image\tfeature cache\t")
	for _, r := range rep.Rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%.2f\t%d images in %.0f s\t\n", r.Dataset, r.Shape, r.Workers, r.ImagesPerS, r.CPUMsPerImage, r.CacheImages, r.CacheSecondsEx)
	}
	tw.Flush()
	if len(rep.Epochs) == 0 {
		return
	}
	fmt.Fprintln(out, "\none DP-SGD epoch on cached features (secure noise, the network's own settings):")
	tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "network\tdataset\tparameters\tbatch\tsteps\ts/epoch\texamples/s\tepochs × s\t")
	var skipped []string
	for _, e := range rep.Epochs {
		if e.Skipped != "" {
			skipped = append(skipped, fmt.Sprintf("%s (%s) skipped: %s", e.Network, e.Dataset, e.Skipped))
			continue
		}
		run := "-"
		if e.Epochs > 0 {
			run = fmt.Sprintf("%d × %.2f = %.0f s", e.Epochs, e.Seconds, e.RunSeconds)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.2f\t%.0f\t%s\t\n", e.Network, e.Dataset, e.Parameters, e.BatchSize, e.Steps, e.Seconds, e.ExamplesPS, run)
	}
	tw.Flush()
	for _, s := range skipped {
		fmt.Fprintln(out, s)
	}
}
