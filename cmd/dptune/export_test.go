package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// trainSmall trains a small MNIST model (200 examples, one epoch at ε) and
// returns its directory.
func trainSmall(t *testing.T, data, eps string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "m")
	if code, text := run(t, "train", "--data-dir", data, "--nominal-size", "200", "--batch-size", "50", "--epochs", "1",
		"--epsilon", eps, "--seed", "1", "--out", out); code != 0 {
		t.Fatalf("train: exit %d: %s", code, text)
	}
	return out
}

// copyDir copies the regular files of dir into a new directory.
func copyDir(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.Mkdir(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// safetensorsMeta reads the __metadata__ of a safetensors file.
func safetensorsMeta(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint64(b))
	var head struct {
		Meta map[string]string `json:"__metadata__"`
	}
	if err := json.Unmarshal(b[8:8+n], &head); err != nil {
		t.Fatal(err)
	}
	return head.Meta
}

// oneLine2 reports whether a command ended with exit 2 and one line.
func oneLine2(code int, text string) bool {
	return code == 2 && strings.Count(strings.TrimSpace(text), "\n") == 0
}

// export refuses a report.json that is not the model's own: its ε or δ
// edited (ε −1, ε 0.01 for a run whose ledger gives about 2, δ 5, δ 0.5),
// its ledger edited, its dataset or a setting the model records changed,
// or another run's report copied in. Each ends with one line and exit 2
// and writes no file. The untouched release exports, and its metadata's ε
// is the one its ledger gives at its δ by its accountant.
func TestExportChecksReportAgainstLedgerAndModel(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two small models")
	}
	data := writeMNISTDir(t, 200, 20, -1)
	m := trainSmall(t, data, "2")
	other := trainSmall(t, data, "4")
	rep := readReport(t, filepath.Join(m, "report.json"))
	var ledger accounting.Ledger
	if err := json.Unmarshal(rep["ledger"], &ledger); err != nil {
		t.Fatal(err)
	}
	var delta float64
	var accName string
	json.Unmarshal(rep["delta"], &delta)
	json.Unmarshal(rep["accountant"], &accName)
	acc, err := accounting.ByName(accName, false)
	if err != nil {
		t.Fatal(err)
	}
	g, err := ledger.Spent(acc, delta)
	if err != nil {
		t.Fatal(err)
	}

	st := filepath.Join(t.TempDir(), "m.safetensors")
	if code, text := run(t, "export", "--model", m, "--format", "safetensors", "--out", st); code != 0 {
		t.Fatalf("export of the untouched release: exit %d: %s", code, text)
	}
	if meta := safetensorsMeta(t, st); meta["epsilon"] != strconv.FormatFloat(g.Epsilon, 'g', -1, 64) || meta["delta"] != strconv.FormatFloat(delta, 'g', -1, 64) {
		t.Errorf("exported ε %s, δ %s; the ledger gives ε %v at δ %v", meta["epsilon"], meta["delta"], g.Epsilon, delta)
	}

	otherReport, err := os.ReadFile(filepath.Join(other, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	set := func(key, value string) func(map[string]json.RawMessage) {
		return func(r map[string]json.RawMessage) { r[key] = json.RawMessage(value) }
	}
	otherLedger := readReport(t, filepath.Join(other, "report.json"))["ledger"]
	for _, c := range []struct {
		name string
		edit func(map[string]json.RawMessage)
		raw  []byte // replaces report.json whole when set
	}{
		{name: "ε −1", edit: set("epsilon", "-1")},
		{name: "ε 0.01", edit: set("epsilon", "0.01")},
		{name: "ε NaN-like string", edit: set("epsilon", `"NaN"`)},
		{name: "δ 5", edit: set("delta", "5")},
		{name: "δ 0.5", edit: set("delta", "0.5")},
		{name: "accountant", edit: set("accountant", `"gdp"`)},
		{name: "dataset", edit: set("dataset", `"cifar10"`)},
		{name: "clip norm", edit: set("clip_norm", "7")},
		{name: "nominal size", edit: set("nominal_size", "60000")},
		{name: "no ledger", edit: func(r map[string]json.RawMessage) { delete(r, "ledger") }},
		{name: "another run's ledger", edit: set("ledger", string(otherLedger))},
		{name: "another run's report", raw: otherReport},
	} {
		dir := copyDir(t, m)
		b := c.raw
		if b == nil {
			r := readReport(t, filepath.Join(dir, "report.json"))
			c.edit(r)
			if b, err = json.Marshal(r); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"onnx", "safetensors"} {
			out := filepath.Join(t.TempDir(), "m."+format)
			code, text := run(t, "export", "--model", dir, "--format", format, "--out", out)
			if !oneLine2(code, text) {
				t.Errorf("%s, %s: exit %d, want 2 and one line: %s", c.name, format, code, text)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s, %s: %s was written", c.name, format, out)
			}
		}
	}
}

// export --out is checked before any work, with one line and exit 2: a
// directory, a missing parent directory, a path under /proc, a symbolic
// link (to /proc/self/fd/1, or to a file), a FIFO, a device node, and any
// path inside the model directory (params.bin, a new name beside it, or
// the model directory through a link) are refused and left as they were;
// a filesystem without room for the export is refused before writing.
func TestExportOutChecked(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a small model")
	}
	if runtime.GOOS != "linux" {
		t.Skip("uses /proc and FIFOs")
	}
	data := writeMNISTDir(t, 200, 20, -1)
	m := trainSmall(t, data, "2")
	params, err := os.ReadFile(filepath.Join(m, "params.bin"))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "dir")
	fifo := filepath.Join(tmp, "fifo")
	stdoutLink := filepath.Join(tmp, "stdout.onnx")
	fileLink := filepath.Join(tmp, "file-link.onnx")
	target := filepath.Join(tmp, "target")
	modelLink := filepath.Join(tmp, "model-link")
	for _, err := range []error{
		os.Mkdir(dir, 0o755),
		syscall.Mkfifo(fifo, 0o600),
		os.Symlink("/proc/self/fd/1", stdoutLink),
		os.WriteFile(target, []byte("keep"), 0o644),
		os.Symlink(target, fileLink),
		os.Symlink(m, modelLink),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	type kept func() bool
	mode := func(p string, want os.FileMode) kept {
		return func() bool { fi, err := os.Lstat(p); return err == nil && fi.Mode().Type() == want }
	}
	absent := func(p string) kept { return func() bool { _, err := os.Lstat(p); return os.IsNotExist(err) } }
	cases := []struct {
		out  string
		want string
		kept kept
	}{
		{dir, "a directory", mode(dir, os.ModeDir)},
		{filepath.Join(tmp, "missing", "m.onnx"), "does not exist", absent(filepath.Join(tmp, "missing"))},
		{"/proc/dptune-export.onnx", "cannot create", absent("/proc/dptune-export.onnx")},
		{stdoutLink, "symbolic link", mode(stdoutLink, os.ModeSymlink)},
		{fileLink, "symbolic link", mode(fileLink, os.ModeSymlink)},
		{fifo, "named pipe", mode(fifo, os.ModeNamedPipe)},
		{filepath.Join(m, "params.bin"), "inside the model directory", nil},
		{filepath.Join(m, "model.json"), "inside the model directory", nil},
		{filepath.Join(m, "report.json"), "inside the model directory", nil},
		{filepath.Join(m, "m.onnx"), "inside the model directory", absent(filepath.Join(m, "m.onnx"))},
		{filepath.Join(modelLink, "params.bin"), "inside the model directory", nil},
	}
	if os.Geteuid() == 0 {
		// A device node: as root the export's rename would replace it.
		null := filepath.Join(tmp, "null")
		if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, 1<<8|3); err == nil {
			cases = append(cases, struct {
				out, want string
				kept      kept
			}{null, "character device", mode(null, os.ModeDevice|os.ModeCharDevice)})
		}
		// A filesystem too small for the export (64 KiB; params.bin alone is larger).
		small := filepath.Join(tmp, "small")
		if err := os.Mkdir(small, 0o755); err == nil && syscall.Mount("tmpfs", small, "tmpfs", 0, "size=64k") == nil {
			t.Cleanup(func() { syscall.Unmount(small, 0) })
			cases = append(cases, struct {
				out, want string
				kept      kept
			}{filepath.Join(small, "m.onnx"), "bytes free", absent(filepath.Join(small, "m.onnx"))})
		}
	}
	for _, c := range cases {
		for _, format := range []string{"onnx", "safetensors"} {
			code, text := run(t, "export", "--model", m, "--format", format, "--out", c.out)
			if !oneLine2(code, text) || !strings.Contains(text, c.want) {
				t.Errorf("--out %s (%s): exit %d, want 2 and one line saying %q: %s", c.out, format, code, c.want, text)
			}
			if c.kept != nil && !c.kept() {
				t.Errorf("--out %s (%s) was changed", c.out, format)
			}
		}
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep" {
		t.Errorf("the link's target holds %q, %v", b, err)
	}
	// The model directory is as it was: the model loads, with its params.
	if b, err := os.ReadFile(filepath.Join(m, "params.bin")); err != nil || !bytes.Equal(b, params) {
		t.Errorf("params.bin changed (%v)", err)
	}
	if _, _, err := model.Load(m); err != nil {
		t.Errorf("the model no longer loads: %v", err)
	}
	// A regular file, and a new name in an existing directory, are written.
	existing := filepath.Join(tmp, "existing.onnx")
	if err := os.WriteFile(existing, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{existing, filepath.Join(tmp, "new.onnx")} {
		if code, text := run(t, "export", "--model", m, "--out", out); code != 0 {
			t.Errorf("--out %s: exit %d: %s", out, code, text)
		}
		if fi, err := os.Lstat(out); err != nil || !fi.Mode().IsRegular() || fi.Size() < int64(len(params)) {
			t.Errorf("--out %s: %v, %v", out, fi, err)
		}
	}
}
