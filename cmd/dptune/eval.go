package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
)

func newEvalCmd() *cobra.Command {
	var modelDir, dataset, dataDir string
	cmd := &cobra.Command{
		Use:   "eval",
		Short: "Print a saved model's test accuracy and loss",
		Long: `eval loads a model saved by dptune train or tune and prints its accuracy and
mean cross-entropy on the dataset's test set. A model whose parameters are
not all finite is refused (exit 1).`,
		Example: `  dptune eval --model out/mnist --dataset mnist
  dptune eval --model out/cifar --dataset cifar10 --data-dir data/cifar-10-batches-bin`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := job.Dataset(dataset, dataDir)
			if err != nil {
				return err
			}
			if modelDir == "" {
				return usagef("--model DIR is required")
			}
			net, _, err := model.Load(modelDir)
			if err != nil {
				return err
			}
			if !net.Arch.SameInput(src.Arch) {
				return usagef("the model in %s reads %d×%d×%d inputs of %d classes; %s has %d×%d×%d inputs of %d", modelDir,
					net.Arch.C, net.Arch.H, net.Arch.W, net.Arch.Classes, dataset, src.Arch.C, src.Arch.H, src.Arch.W, src.Arch.Classes)
			}
			if err := net.CheckFinite(); err != nil {
				return fmt.Errorf("the model in %s: %w", modelDir, err)
			}
			_, test, err := src.Load()
			if err != nil {
				return err
			}
			m, err := job.Evaluate(cmd.Context(), net, test.X, test.Y)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "test accuracy  %.4f\ntest loss      %.4f\nexamples       %d\n", m.Accuracy, m.Loss, m.N)
			return nil
		},
	}
	cmd.Flags().StringVar(&modelDir, "model", "", "directory written by dptune train")
	cmd.Flags().StringVar(&dataset, "dataset", "mnist", "dataset: "+job.DatasetHelp())
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory of the dataset's files (default "+job.DefaultDirHelp()+")")
	return cmd
}
