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
is a PNG, JPEG, GIF or TIFF file, or a directory whose .png, .jpg, .jpeg,
.gif, .tif and .tiff files are read (any depth, in lexical order). Images are read as the model's training
data was: converted to its channels, resized bilinearly to its input size and
normalised with the constants saved with it. It prints each image's label (the
class name from the dataset or the image folder) and its probability, or with
--json one JSON array of {"path", "label", "index", "probabilities"}.

Images are read and labelled a batch at a time (at most 64 MiB of pixels
as float32), and each batch's lines are printed before the next is read, in
input order: memory does not grow with the number of images. An image that cannot be read
ends the command (exit 2) after the lines before it; with --json the array is
then left unclosed.

A file name that is not valid UTF-8 keeps its exact bytes in "path_bytes"
(base64) beside "path", which holds the name as Python's os.fsdecode reads it
(surrogateescape: each undecodable byte b as the escape \udcXX of U+DC00 + b),
so that Python's json.load gives a str that open() and os.fsencode() take for
that very file; other readers should use "path_bytes" when it is present.`,
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
			out := cmd.OutOrStdout()
			n := 0
			err := job.PredictEach(cmd.Context(), modelDir, paths, func(done, total int) {
				if b == nil {
					b = newPhaseBar(cmd.ErrOrStderr(), total, "images")
				}
				b.Set(done)
			}, func(p job.Prediction) error {
				n++
				if !asJSON {
					_, err := fmt.Fprintf(out, "%s\t%s\t%.4f\n", textsafe.Quoted(p.Path), textsafe.Quoted(p.Label), p.Probabilities[p.Index])
					return err
				}
				// One JSON array, an element per image as it is labelled.
				js, err := json.MarshalIndent(p, "  ", "  ")
				if err != nil {
					return err
				}
				sep := ",\n  "
				if n == 1 {
					sep = "[\n  "
				}
				_, err = fmt.Fprintf(out, "%s%s", sep, js)
				return err
			})
			if b != nil {
				b.Close()
			}
			if err != nil {
				// The predictions so far are out; a JSON array is left
				// open, so that no reader takes it for the whole answer.
				return err
			}
			if asJSON {
				_, err = fmt.Fprint(out, "\n]\n")
			}
			return err
		},
	}
	cmd.Flags().StringVar(&modelDir, "model", "", "directory written by dptune train or tune")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON array of {path, label, index, probabilities} (and path_bytes for a file name that is not UTF-8)")
	return cmd
}
