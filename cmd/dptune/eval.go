package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/job"
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
			m, err := job.EvaluateSaved(cmd.Context(), modelDir, src)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "test accuracy  %.4f\ntest loss      %.4f\nexamples       %d\n", m.Accuracy, m.Loss, m.N)
			return nil
		},
	}
	cmd.Flags().StringVar(&modelDir, "model", "", "directory written by dptune train")
	cmd.Flags().StringVar(&dataset, "dataset", "mnist", "dataset: "+data.NamesList())
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "directory of the dataset's files (default "+job.DefaultDirHelp()+")")
	return cmd
}
