package job

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/model"
)

// ExportFormats are the formats Export writes.
var ExportFormats = []string{"onnx", "safetensors"}

// exportFacts are the release's public facts an export carries, read from
// the model directory's report.json.
type exportFacts struct {
	Dataset     string   `json:"dataset"`
	NominalSize int      `json:"nominal_size"`
	Epsilon     *float64 `json:"epsilon"`
	Delta       float64  `json:"delta"`
	Accountant  string   `json:"accountant"`
}

// ExportMetadata is what an exported model carries besides its weights,
// every value a string (as safetensors' "__metadata__" requires): the
// network's spec and input shape ("spec", "input_shape" as [C, H, W]),
// its classes and pixel normalisation ("classes", "mean", "std", JSON),
// and the release's privacy facts from its report.json ("epsilon",
// "delta", "accountant", "dataset", "nominal_size"). All of it is in the
// release already: nothing an export adds is private.
func ExportMetadata(dir string, net *model.Net, meta model.Metadata) (map[string]string, error) {
	b, err := fsx.ReadFile(filepath.Join(dir, "report.json"), 64<<20)
	if err != nil {
		return nil, invalidf("the model in %s has no report.json to take its privacy facts from: %v", dir, err)
	}
	var f exportFacts
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, invalidf("%s: %v", filepath.Join(dir, "report.json"), err)
	}
	if f.Epsilon == nil {
		return nil, invalidf("%s states no ε: a model without a privacy guarantee is not exported", filepath.Join(dir, "report.json"))
	}
	spec, err := json.Marshal(net.Arch.Spec)
	if err != nil {
		return nil, err
	}
	in, err := inputOf(net.Arch, meta)
	if err != nil {
		return nil, invalidf("the model in %s: %v", dir, err)
	}
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	return map[string]string{
		"format":       "dptune-export/1",
		"spec":         string(spec),
		"input_shape":  js([]int{net.Arch.C, net.Arch.H, net.Arch.W}),
		"classes":      js(in.Classes),
		"mean":         js(in.Mean),
		"std":          js(in.Std),
		"epsilon":      strconv.FormatFloat(*f.Epsilon, 'g', -1, 64),
		"delta":        strconv.FormatFloat(f.Delta, 'g', -1, 64),
		"accountant":   f.Accountant,
		"dataset":      f.Dataset,
		"nominal_size": strconv.Itoa(f.NominalSize),
	}, nil
}

// Export writes the model saved in dir (by dptune train or tune) to out in
// format (ExportFormats): "onnx", a self-contained ONNX model whose input
// is raw pixels in [0, 255] and whose output is the logits
// (model.Net.WriteONNX), ExportMetadata in its metadata_props; or
// "safetensors", the weights under the equivalent torch.nn.Sequential's
// state_dict keys ("0.weight", …) with ExportMetadata in the header. out
// is written atomically. Errors wrap ErrInvalid for an unknown format, a
// model that does not load or has non-finite parameters, a release
// without its report, or a layer without an ONNX form (the ScatterNet
// front layer).
func Export(dir, format, out string) error {
	if format != "safetensors" && format != "onnx" {
		return invalidf("unknown export format %q (want onnx or safetensors)", format)
	}
	net, meta, err := model.Load(dir)
	if err != nil {
		return invalid(err)
	}
	if err := net.CheckFinite(); err != nil {
		return invalidf("the model in %s: %v", dir, err)
	}
	md, err := ExportMetadata(dir, net, meta)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if format == "onnx" {
		in, _ := inputOf(net.Arch, meta) // ExportMetadata checked it
		if err := net.WriteONNX(&buf, in, md); err != nil {
			return invalid(err)
		}
	} else if err := net.WriteSafetensors(&buf, md); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return fsx.WriteFileAtomic(out, buf.Bytes(), 0o644)
}
