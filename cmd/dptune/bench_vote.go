package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/bench"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/tuning"
)

// benchVoteFlags are bench vote's flags: the request and its data.
type benchVoteFlags struct {
	bench.VoteRequest
	data dataFlags
}

func newBenchVoteCmd() *cobra.Command {
	var f benchVoteFlags
	cmd := &cobra.Command{
		Use:   tuning.VoteName,
		Short: "DP-Hype's figures: the vote simulation (Figure 2, Theorem V.1) and Opt / RandGuess / DP-Hype on real data",
		Long: `vote reproduces DP-Hype (Figure 2's simulation with Theorem V.1's bound
overlaid; Figures 5 and 6 on real data) into --out.

The real-data part splits a public subset of the training set (--subset)
among n clients (IID for each --clients, Dirichlet(α) for each α of
--alphas with each n of --alpha-clients), has every client train every candidate of the
space locally and score it on its held-out fifth, and trains every candidate
by FedAvg for its test accuracy (Opt: the best; RandGuess: the mean). Both
are cached in --out, so a rerun costs only the votes: --reps votes per ε,
each with the mechanism's own calibrated discrete Gaussian shares, scored by
the winner's federated accuracy. The paper's figures use non-private
federated training; the dp-sgd figure repeats the IID setting with the
first --alpha-clients n at the total example-level ε of --dpsgd-epsilons
(half of each for the vote).`,
		Example: `  dptune bench vote --out out/bench-vote
  dptune bench vote --sim-only --out out/vote-sim`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runBenchVote(cmd, f) },
	}
	fl := cmd.Flags()
	addDataFlags(fl, &f.data)
	fl.StringVar(&f.Out, "out", "out/bench-vote", "directory for figures (PNG), vote.json, CSV and the cache")
	fl.StringVar(&f.Space, "space", "", "candidate grid: a .json file (default: mnist-vote)")
	fl.BoolVar(&f.SimOnly, "sim-only", false, "only the simulation (Figure 2)")
	fl.IntVar(&f.SimReps, "sim-reps", 1000, fmt.Sprintf("repetitions per simulation point, 1 to %d", bench.MaxVoteReps))
	fl.IntVar(&f.Reps, "reps", 1000, fmt.Sprintf("votes per real-data point, 1 to %d", bench.MaxVoteReps))
	fl.IntVar(&f.Subset, "subset", 12000, "training examples used (a fixed public subset; 0: all)")
	fl.IntSliceVar(&f.Clients, "clients", []int{5, 10, 20}, "n of the IID settings")
	fl.Float64SliceVar(&f.Alphas, "alphas", []float64{0.1, 0.5, 1}, "Dirichlet α of the non-IID settings")
	fl.IntSliceVar(&f.AlphaClients, "alpha-clients", []int{10}, "n of the non-IID settings (each with every α); the first is the dp-sgd figure's")
	fl.Float64SliceVar(&f.Epsilons, "epsilons", []float64{0.5, 1, 2, 5}, "the vote's client-level ε")
	fl.Float64SliceVar(&f.DPSGDEpsilons, "dpsgd-epsilons", []float64{2, 4, 8}, "total example-level ε of the dp-sgd figure")
	fl.BoolVar(&f.NoDPSGD, "no-dpsgd", false, "skip the dp-sgd figure")
	fl.Float64Var(&f.Delta, "delta", 1e-5, "δ")
	fl.IntVar(&f.VotesPerClient, "votes-per-client", 5, "ℓ (the paper's choice: 5)")
	fl.IntVar(&f.LocalEpochs, "local-epochs", 1, "epochs of each client's local training of each candidate")
	fl.IntVar(&f.BatchSize, "batch-size", 64, "batch size of local and federated training")
	fl.IntVar(&f.Rounds, "fedavg-rounds", 3, "FedAvg rounds, one local epoch each")
	fl.Float64Var(&f.ClipNorm, "clip-norm", 1, "clipping norm of the dp-sgd final training")
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of the subset, splits, training and votes")
	return cmd
}

func runBenchVote(cmd *cobra.Command, f benchVoteFlags) error {
	sim, real, err := f.Plan(func() (job.Source, error) { return f.data.source(cmd) })
	if err != nil {
		return err
	}
	w := cmd.ErrOrStderr()
	if real != nil {
		real.Progress = stagedProgressTo(w)
	}
	fmt.Fprintf(w, "simulation: Figure 2, %d repetitions per point\n", sim.Reps)
	rep, err := bench.Vote(cmd.Context(), f.Out, sim, real)
	if err != nil {
		return err
	}
	printVoteReport(cmd.OutOrStdout(), rep)
	fmt.Fprintf(w, "wall time %.0f s; figures and vote.json in %s\n", rep.Seconds, f.Out)
	return nil
}

func printVoteReport(out io.Writer, rep bench.VoteReport) {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "Figure 2 (simulation)\tloss sd\t|G|\tℓ\tε\tσ (votes)\tP(good)\t± 95%%\tTheorem V.1 bound\n")
	for _, p := range rep.Simulation {
		fmt.Fprintf(tw, "%s\t%g\t%d\t%d\t%g\t%.1f\t%.3f\t%.3f\t%.3f\n", p.Figure, p.LossStddev, p.Good, p.VotesPerClient, p.Epsilon, p.NoiseStddev, p.Success, p.CI95, p.Bound)
	}
	tw.Flush()
	if len(rep.Real) == 0 {
		return
	}
	fmt.Fprintln(out)
	fmt.Fprintf(tw, "real data\tfinal training\tn\tα\tε\tvote ε\tσ (votes)\tOpt\tRandGuess\tDP-Hype\t± 95%%\n")
	for _, p := range rep.Real {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%g\t%g\t%g\t%.1f\t%.4f\t%.4f\t%.4f\t%.4f\n", p.Setting, p.FinalTraining, p.Clients, p.Alpha, p.Epsilon, p.VoteEpsilon,
			p.NoiseStddev, p.Opt, p.RandGuess, p.DPHype, p.CI95)
	}
	tw.Flush()
}
