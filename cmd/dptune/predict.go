package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/internal/textsafe"
	"github.com/dptune/dptune/job"
)

func newPredictCmd() *cobra.Command {
	var modelDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "predict --model DIR [--json] PATH…",
		Short: "Label image files or directories with a saved model",
		Long: `predict labels images with a model saved by dptune train or tune. Each PATH
is a PNG or JPEG file, or a directory whose .png, .jpg and .jpeg files are
read (any depth, in lexical order). Images are read as the model's training
data was: converted to its channels, resized bilinearly to its input size and
normalised with the constants saved with it. It prints each image's label (the
class name from the dataset or the image folder) and its probability, or with
--json one JSON array of {"path", "label", "index", "probabilities"}.`,
		Example: `  dptune predict --model out/mnist digit.png
  dptune predict --model out/photos --json photos/test`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, paths []string) error {
			if modelDir == "" {
				return usagef("--model DIR is required")
			}
			if len(paths) == 0 {
				return usagef("give one or more image files or directories")
			}
			var b *bar
			preds, err := job.Predict(cmd.Context(), modelDir, paths, func(done, total int) {
				if b == nil {
					b = newPhaseBar(cmd.ErrOrStderr(), total, "images")
				}
				b.Set(done)
			})
			if b != nil {
				b.Close()
			}
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				js, err := json.MarshalIndent(preds, "", "  ")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(out, "%s\n", js)
				return err
			}
			for _, p := range preds {
				fmt.Fprintf(out, "%s\t%s\t%.4f\n", textsafe.Quoted(p.Path), textsafe.Quoted(p.Label), p.Probabilities[p.Index])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&modelDir, "model", "", "directory written by dptune train or tune")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON array of {path, label, index, probabilities}")
	return cmd
}
