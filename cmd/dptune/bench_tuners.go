package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/bench"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/runner"
)

// benchTunersFlags are bench tuners' flags: the request, its data and
// network, and the runner.
type benchTunersFlags struct {
	bench.TunersRequest
	dataset, dataDir, model, featureCache string
	run                                   runnerFlags
}

func newBenchTunersCmd() *cobra.Command {
	var f benchTunersFlags
	cmd := &cobra.Command{
		Use:   "tuners",
		Short: "DP-HyPO's semi-real simulation: GP vs uniform tuning on landscapes of real DP-SGD runs (Table 1)",
		Long: `tuners reproduces DP-HyPO's MNIST simulation (Wang et al. 2023, Section 4.2.1,
Appendix E.1, Table 1) on real data. It first builds two landscapes — the test
accuracy of real DP-SGD runs at each point of a subgrid of the search space,
one at the GP tuner's noise multiplier and one at the uniform tuner's, both
calibrated for the same total ε with geometric runs of mean 1/--ref-gamma —
cached in a CSV file that later runs reuse. Then, for each geometric γ, it
runs both tuners --repeats times on the landscapes (each visit scores the
landscape mean plus N(0, --score-noise²)) and prints the mean accuracy of the
selected candidate, as the paper's Table 1, with a plot.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchTuners(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.dataset, "dataset", "mnist", "mnist or cifar10")
	addRunnerFlags(fl, &f.run)
	fl.StringVar(&f.dataDir, "data-dir", "", "directory of the dataset's files (default for mnist: the GoMNIST module)")
	addModelFlag(fl, &f.model)
	fl.StringVar(&f.featureCache, "feature-cache", job.DefaultFeatureCache(), "curator directory keeping the features of a network with a scatter front end, computed once per dataset (created 0700, files 0600); empty: compute them on every run")
	fl.StringVar(&f.Space, "space", "", "search space (default: the dataset's DP-HyPO grid)")
	fl.IntVar(&f.LRStride, "lr-stride", 2, "keep every n-th learning rate of the space")
	fl.IntVar(&f.ClipStride, "clip-stride", 4, "keep every n-th clipping norm of the space")
	fl.IntVar(&f.Epochs, "epochs", 1, "epochs of each landscape run")
	fl.IntVar(&f.Seeds, "seeds", 2, "landscape runs per grid point")
	fl.IntVar(&f.BatchSize, "batch-size", 256, "expected batch size")
	fl.Float64Var(&f.Epsilon, "epsilon", 15, "total ε in nats of each tuning (the paper's MNIST simulation: 15)")
	fl.Float64Var(&f.Delta, "delta", 1e-5, "δ")
	fl.Float64Var(&f.RefGamma, "ref-gamma", 0.01, "geometric γ at which each method's noise multiplier is calibrated")
	fl.Float64SliceVar(&f.Gammas, "gammas", []float64{0.002, 0.003, 0.005, 0.01, 0.02, 0.025, 0.03}, "geometric γ of the number of runs (DP-HyPO's Table 1 but γ = 0.001, whose E[K] = 1000 is above the 700 runs dptune draws)")
	fl.IntVar(&f.Repeats, "repeats", 200, "tunings per cell")
	fl.Float64Var(&f.ScoreNoise, "score-noise", 0.1, "standard deviation of each visit's score around the landscape mean")
	fl.StringVar(&f.Cache, "cache", "", "landscape CSV cache (default: DIR/landscape-DATASET.csv)")
	fl.StringVar(&f.Out, "out", "out/bench-tuners", "directory for the table (CSV, JSON) and plot (PNG)")
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of the simulation")
	return cmd
}

func runBenchTuners(cmd *cobra.Command, f benchTunersFlags) error {
	src, err := job.Dataset(f.dataset, f.dataDir)
	if err == nil {
		src, err = withModel(src, f.model)
	}
	if err != nil {
		return err
	}
	p, err := f.Plan(cmd.Context(), src)
	if err != nil {
		return err
	}
	if err := f.run.check(cmd); err != nil {
		return err
	}
	run, end, err := f.run.open(cmd.Context(), cmd, "bench tuners", f.Out)
	if err != nil {
		return err
	}
	if run == nil {
		run = runner.Local{} // one run per core, each engine on its share
	}
	p.Data = p.Data.ForRunner(run) // workers check their copy of the data
	w := cmd.ErrOrStderr()
	start, load := time.Now(), bench.LoadAvg()
	p.Data.Features = job.FeatureCache{Dir: f.featureCache, Progress: featureProgress(w)}
	train, test, err := p.Data.LoadInputs(cmd.Context(), nil) // the sets the network reads, as the landscapes' jobs expect
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "landscapes of %s: %d candidates × %d seeds × %d epoch(s) at batch %d, σ = %.4f (GP) and %.4f (uniform), cache %s\n",
		src.Arch.Name, p.Space.Size(), p.Seeds, p.Epochs, p.BatchSize, p.SigmaGP, p.SigmaUniform, p.Cache)
	ls, err := p.Landscapes(cmd.Context(), train, test, run, func(label string) func(done, total int) { return progressTo(w, label) })
	if err != nil {
		return errors.Join(err, end(errors.Is(err, context.Canceled)))
	}
	if err := end(false); err != nil {
		return err
	}
	cells, err := p.Simulate(cmd.Context(), ls, progressTo(w, "simulation tunings"))
	if err != nil {
		return err
	}
	printTunerTable(cmd.OutOrStdout(), cells, ls, p)
	return p.Write(cells, ls, bench.TunersSitting{Command: commandLine(), Network: src.Arch.Name, CPUs: runtime.NumCPU(), Load: []string{load, bench.LoadAvg()},
		Wall: time.Since(start).Seconds(), Finished: time.Now().UTC().Format(time.RFC3339)})
}

func printTunerTable(out io.Writer, cells []bench.TunerSimCell, ls [2]bench.Landscape, p bench.TunersPlan) {
	fmt.Fprintf(out, "DP-HyPO Table 1 on real landscapes (%s, %s, %d candidates, ε = %g, %d tunings per cell; best landscape mean: GP %.3f, uniform %.3f; landscape runs: %.1f h of wall time)\n\n",
		p.Data.Name, ls[0].Network, ls[0].Space.Size(), p.Epsilon, p.Repeats, ls[0].Best(), ls[1].Best(), (ls[0].Seconds+ls[1].Seconds)/3600)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(name string, v func(bench.TunerSimCell) string) {
		fmt.Fprint(tw, name)
		for _, c := range cells {
			fmt.Fprint(tw, "\t"+v(c))
		}
		fmt.Fprintln(tw, "\t")
	}
	row("Geometric(γ)", func(c bench.TunerSimCell) string { return strconv.FormatFloat(c.Gamma, 'g', -1, 64) })
	row("GP", func(c bench.TunerSimCell) string { return fmt.Sprintf("%.3f", c.GPAccuracy) })
	row("Uniform", func(c bench.TunerSimCell) string { return fmt.Sprintf("%.3f", c.UniformAccuracy) })
	row("GP − Uniform (paired)", func(c bench.TunerSimCell) string { d, _ := c.GapAndStdErr(); return fmt.Sprintf("%+.3f", d) })
	row("± (2 s.e.)", func(c bench.TunerSimCell) string { _, se := c.GapAndStdErr(); return fmt.Sprintf("%.3f", 2*se) })
	tw.Flush()
}
