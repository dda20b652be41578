package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/bench"
)

// newBenchDoublingCmd is `dptune bench doubling`: the doubling tuner's
// simulations (bench.DoublingFigures).
func newBenchDoublingCmd() *cobra.Command {
	var out string
	var seeds, reps int
	cmd := &cobra.Command{
		Use:   "doubling",
		Short: "Ding et al.'s doubling-tuner simulations: Figures 1, 3 and 4 as PNG and CSV",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := bench.CheckDoublingRequest(out, seeds, reps); err != nil {
				return err
			}
			sum, err := bench.DoublingFigures(cmd.Context(), out, seeds, reps)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "figures 1, 3, 4 (PNG and CSV) and doubling.json in %s; iterations T ≈ %.2f·log₂ n = %.2f·ln n (Figure 4; the paper finds c ≈ 3)\n", out, sum.FitLog2, sum.FitLn)
			fmt.Fprintln(w, "Figure 3, mean final fidelity:  utilities   kϵ    α")
			for _, p := range sum.Fidelity {
				fmt.Fprintf(w, "                                 %-10s  %-4g  %.2f\n", p.Utilities, p.KEpsilon, p.Fidelity)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "out/bench-doubling", "directory for the figures")
	cmd.Flags().IntVar(&seeds, "seeds", 20, "trajectories in Figure 1")
	cmd.Flags().IntVar(&reps, "reps", 10, "repetitions per n in Figure 4")
	return cmd
}
