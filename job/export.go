package job

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// ExportFormats are the formats Export writes.
var ExportFormats = []string{"onnx", "safetensors"}

// exportFacts are the release's public facts an export carries, read from
// the model directory's report.json, with what they are checked against:
// the report's ledger and the facts of the run that the model records too.
type exportFacts struct {
	Dataset     string          `json:"dataset"`
	NominalSize int             `json:"nominal_size"`
	Epsilon     *float64        `json:"epsilon"`
	Delta       float64         `json:"delta"`
	Accountant  string          `json:"accountant"`
	Ledger      json.RawMessage `json:"ledger"`
	// BatchSize and SamplingRate: a training run's report only.
	BatchSize    int     `json:"batch_size"`
	SamplingRate float64 `json:"sampling_rate"`
}

// reportAccountant is the accountant that computed a report's ε from its
// ledger: the one it names ("" in a vote's report, which counts by RDP),
// or for an approximate tuning ("xiang-o") the RDP accountant at the
// orders of Xiang et al.'s Algorithm 3 (tuning.XiangAccountant).
func reportAccountant(name string) (accounting.Accountant, error) {
	if name == tuning.XiangO {
		return tuning.XiangAccountant(), nil
	}
	return accounting.ByName(name, true)
}

// sharedHyper are the model.json hyperparameters that a report states
// under the same name and meaning: a training run's settings and a
// tuning's tuner and selection. (A tuning's "sampling_rate" and "steps"
// are its released model's own run, which its report does not state.)
var sharedHyper = map[string]bool{"tuner": true, "selected": true, "selected_choices": true}

// trainHyper are the settings a training run's report and its model.json
// both record; a model.json with "clip_norm" is a training run's. A run
// with automatic clipping records "clipping" and "auto_clip_gamma" too.
var trainHyper = []string{"noise_multiplier", "clip_norm", "clipping", "auto_clip_gamma", "sampling_rate", "steps", "learning_rate", "momentum", "lr_schedule", "ema_decay", "private"}

// epsilonTolerance is how far, relative to it, a report's ε may be from
// the ε recomputed from its ledger (the same computation, so equal but
// for a different machine's last bits).
const epsilonTolerance = 1e-9

// checkFacts returns an error wrapping ErrInvalid unless the report's
// facts f are those of the model saved beside it: its ε is what its own
// ledger gives at its δ (in (0, 1)) under its accountant, its ledger is
// the one saved with the model in model.json, its dataset is the model's,
// and every setting both record (hyperparameters, the sampling rate of
// its batch size and nominal size) agrees. An edited report, or another
// run's, is refused rather than exported with facts the release does not
// support.
func checkFacts(report string, f exportFacts, raw map[string]json.RawMessage, meta model.Metadata) error {
	bad := func(format string, a ...any) error {
		return invalidf("%s: %s: the export would carry privacy facts that are not this model's", report, fmt.Sprintf(format, a...))
	}
	eps := *f.Epsilon
	switch {
	case math.IsNaN(eps) || eps < 0 || eps >= 1e300:
		return bad("ε = %v is not a finite non-negative number", eps)
	case accounting.CheckDelta(f.Delta) != nil:
		return bad("%v", accounting.CheckDelta(f.Delta))
	case f.NominalSize < 1:
		return bad("nominal size %d is not positive", f.NominalSize)
	case len(f.Ledger) == 0 || string(f.Ledger) == "null":
		return bad("it has no ledger to check ε against")
	case len(meta.Ledger) == 0:
		return bad("the model's model.json records no ledger to check the report against")
	}
	var ledger, saved accounting.Ledger
	if err := json.Unmarshal(f.Ledger, &ledger); err != nil {
		return bad("its ledger: %v", err)
	}
	if err := json.Unmarshal(meta.Ledger, &saved); err != nil {
		return invalidf("%s: the ledger in model.json: %v", filepath.Dir(report), err)
	}
	a, errA := json.Marshal(ledger)
	b, errB := json.Marshal(saved)
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		return bad("its ledger is not the one saved with the model (another run's report, or an edited one)")
	}
	acc, err := reportAccountant(f.Accountant)
	if err != nil {
		return bad("%v", err)
	}
	g, err := ledger.Spent(acc, f.Delta)
	if err != nil {
		return bad("its ledger's ε at δ = %g: %v", f.Delta, err)
	}
	if !(math.Abs(g.Epsilon-eps) <= epsilonTolerance*math.Max(1, g.Epsilon)) {
		return bad("it states ε = %v at δ = %g, but its ledger gives ε = %v by the %s accountant", eps, f.Delta, g.Epsilon, acc.Name())
	}
	if in := meta.Input; in != nil && in.Dataset != "" && in.Dataset != f.Dataset && !(in.Dataset == FolderName && IsFolderDatasetName(f.Dataset)) {
		return bad("dataset %q, but the model was trained on %q", f.Dataset, in.Dataset)
	}
	var hyper map[string]json.RawMessage
	if len(meta.Hyperparameters) > 0 {
		if err := json.Unmarshal(meta.Hyperparameters, &hyper); err != nil {
			return invalidf("%s: the hyperparameters in model.json: %v", filepath.Dir(report), err)
		}
	}
	shared := sharedHyper
	if _, ok := hyper["clip_norm"]; ok {
		shared = map[string]bool{}
		for _, k := range trainHyper {
			shared[k] = true
		}
		if f.BatchSize > 0 && !sameNumber(f.SamplingRate, float64(f.BatchSize)/float64(f.NominalSize)) {
			return bad("sampling rate %v is not its batch size %d over its nominal size %d", f.SamplingRate, f.BatchSize, f.NominalSize)
		}
	}
	for k := range shared {
		h, ok1 := hyper[k]
		r, ok2 := raw[k]
		if !ok1 || !ok2 {
			continue
		}
		var hv, rv any
		if json.Unmarshal(h, &hv) != nil || json.Unmarshal(r, &rv) != nil || !sameJSON(hv, rv) {
			return bad("%s is %s, but the model records %s", k, r, h)
		}
	}
	return nil
}

// sameNumber reports whether a and b agree to epsilonTolerance.
func sameNumber(a, b float64) bool {
	return math.Abs(a-b) <= epsilonTolerance*math.Max(math.Abs(a), math.Abs(b))
}

// sameJSON reports whether two decoded JSON values are equal, numbers to
// epsilonTolerance.
func sameJSON(a, b any) bool {
	switch a := a.(type) {
	case float64:
		b, ok := b.(float64)
		return ok && sameNumber(a, b)
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok || !sameJSON(v, w) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !sameJSON(a[i], b[i]) {
				return false
			}
		}
		return true
	}
	return a == b
}

// ExportMetadata is what an exported model carries besides its weights,
// every value a string (as safetensors' "__metadata__" requires): the
// network's spec and input shape ("spec", "input_shape" as [C, H, W]),
// its classes and pixel normalisation ("classes", "mean", "std", JSON),
// and the release's privacy facts from its report.json ("epsilon",
// "delta", "accountant", "dataset", "nominal_size"). All of it is in the
// release already: nothing an export adds is private. The report's facts
// are checked first (checkFacts): a report whose ε is not its ledger's,
// whose δ is outside (0, 1), or that is not this model's (its ledger,
// dataset or settings differ from those in model.json) is refused with an
// error wrapping ErrInvalid.
func ExportMetadata(dir string, net *model.Net, meta model.Metadata) (map[string]string, error) {
	report := filepath.Join(dir, "report.json")
	b, err := fsx.ReadFile(report, 64<<20)
	if err != nil {
		return nil, invalidf("the model in %s has no report.json to take its privacy facts from: %v", dir, err)
	}
	var f exportFacts
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, invalidf("%s: %v", report, err)
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, invalidf("%s: %v", report, err)
	}
	if f.Epsilon == nil {
		return nil, invalidf("%s states no ε: a model without a privacy guarantee is not exported", report)
	}
	if err := checkFacts(report, f, raw, meta); err != nil {
		return nil, err
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

// CheckExportOut returns an error wrapping ErrInvalid, naming out, unless
// an export of the model in dir can be written to out: call it before any
// work. out must name a regular file or nothing: a directory, a symbolic
// link (to /proc/self/fd/1, say), a device (/dev/null), a FIFO or a socket
// at out is refused, not replaced by the export's atomic rename. Its
// directory must exist (it is not created), be writable (a file is created
// and removed in it: nothing can be written under /proc) and lie outside
// dir: an export is never written into the model directory, over its
// model.json, params.bin or report.json or beside them (out's directory is
// compared with dir and each of its parents by os.SameFile, after symbolic
// links, so no other name of the model directory gets through either).
func CheckExportOut(dir, out string) error {
	if out == "" {
		return invalidf("--out: an empty file name")
	}
	if fi, err := os.Lstat(out); err == nil {
		if !fi.Mode().IsRegular() {
			return invalidf("--out %s is %s, not a regular file: an export replaces a regular file only", out, fsx.Kind(fi.Mode()))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return invalidf("--out %s: %v", out, err)
	}
	parent := filepath.Dir(out)
	fi, err := os.Stat(parent)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return invalidf("--out %s: its directory %s does not exist", out, parent)
	case err != nil:
		return invalidf("--out %s: %v", out, err)
	case !fi.IsDir():
		return invalidf("--out %s: %s is not a directory", out, parent)
	}
	mfi, err := os.Stat(dir)
	if err != nil {
		return invalidf("--model %s: %v", dir, err)
	}
	real, err := filepath.EvalSymlinks(parent)
	if err == nil {
		real, err = filepath.Abs(real)
	}
	if err != nil {
		return invalidf("--out %s: %v", out, err)
	}
	for d := real; ; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil && os.SameFile(fi, mfi) {
			return invalidf("--out %s is inside the model directory %s: write the export elsewhere (it would replace or sit beside the release's own files)", out, dir)
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	f, err := os.CreateTemp(parent, ".dptune-write-check-*")
	if err != nil {
		return invalidf("--out %s: cannot create a file in %s: %v", out, parent, err)
	}
	f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return invalidf("--out %s: %v", out, err)
	}
	return nil
}

// Export writes the model saved in dir (by dptune train or tune) to out in
// format (ExportFormats): "onnx", a self-contained ONNX model whose input
// is raw pixels in [0, 255] and whose output is the logits
// (model.Net.WriteONNX), ExportMetadata in its metadata_props; or
// "safetensors", the weights under the equivalent torch.nn.Sequential's
// state_dict keys ("0.weight", …) with ExportMetadata in the header. out
// is written atomically. Errors wrap ErrInvalid, before anything is
// written, for an unknown format, an out CheckExportOut refuses or whose
// filesystem has too little room for the export (where the free space can
// be read), a model that does not load or has non-finite parameters, a
// release without its report or whose report is not the model's
// (ExportMetadata), or a layer without an ONNX form (named; the ScatterNet
// front layer has one). A disk that fills while out is written (after the room check)
// is a plain error: out is left as it was.
func Export(dir, format, out string) error {
	if format != "safetensors" && format != "onnx" {
		return invalidf("unknown export format %q (want onnx or safetensors)", format)
	}
	if err := CheckExportOut(dir, out); err != nil {
		return err
	}
	net, meta, err := model.Load(dir)
	if err != nil {
		return invalid(err)
	}
	if err := net.CheckFinite(); err != nil {
		return invalidf("the model in %s: %v", dir, err)
	}
	need, err := ReleaseBytes(net.Arch)
	if err != nil {
		return err
	}
	if err := CheckRoom(filepath.Dir(out), need); err != nil {
		return invalidf("--out %s: %v", out, err)
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
