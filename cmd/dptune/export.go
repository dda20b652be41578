package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dptune/dptune/job"
)

func newExportCmd() *cobra.Command {
	var modelDir, format, out string
	cmd := &cobra.Command{
		Use:   "export --model DIR --format onnx|safetensors --out FILE",
		Short: "Write a saved model in a format other tools read",
		Long: `export writes a model saved by dptune train or tune for use elsewhere.

onnx: a self-contained ONNX model (opset 17) for ONNX Runtime and other
clients: its one input "pixels" is the raw image as float32 values in
[0, 255], [N, C, H, W] with N dynamic; its first nodes do dptune's own
scaling and normalisation; its one output "logits" is [N, classes]. The
metadata_props carry the same facts as the safetensors header below. A
ScatterNet front layer exports as standard operators (its filters as fixed
DFT-domain weights, the modulus from elementwise operators); a layer with
no ONNX form is refused by name.

safetensors: the weights (float32) under the state_dict keys of the
equivalent torch.nn.Sequential, whose module i is the network spec's layer i
("0.weight", "0.bias", …; a datanorm layer's "mean" and "var" buffers), and in
the header's __metadata__ the spec, the input shape, the classes, the pixel
normalisation and the release's ε, δ, accountant, dataset and nominal size —
all of which the release already publishes.

The report's ε is checked against its own ledger (at its δ, by its
accountant) and the report against the model (the ledger, dataset and
settings saved in model.json): an edited report, or another run's, is
refused. --out must name a regular file or a new one, in an existing
directory outside the model directory; a directory, a symbolic link, a
device or a FIFO there is refused, never replaced. These checks, and one
for the room the export needs, come before anything is written (exit 2).`,
		Example: `  dptune export --model out/photos --format onnx --out photos.onnx
  dptune export --model out/mnist --format safetensors --out mnist.safetensors`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if modelDir == "" || out == "" {
				return usagef("--model DIR and --out FILE are required")
			}
			if err := job.Export(modelDir, format, out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%s)\n", out, format)
			return nil
		},
	}
	cmd.Flags().StringVar(&modelDir, "model", "", "directory written by dptune train or tune")
	cmd.Flags().StringVar(&format, "format", "onnx", "output format: "+strings.Join(job.ExportFormats, " or "))
	cmd.Flags().StringVar(&out, "out", "", "file to write")
	return cmd
}
