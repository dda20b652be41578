package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// savePredictModel saves a fresh network of spec reading c×h×w images
// into 10 classes "0" … "9", with plain v/255 pixels, and returns its
// directory.
func savePredictModel(t *testing.T, spec model.Spec, c, h, w int) string {
	t.Helper()
	arch, err := model.NewArch(spec, c, h, w, 10)
	if err != nil {
		t.Fatal(err)
	}
	net, err := model.New(arch, randsrc.Seeded(1, "predict test"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	in := model.Input{Dataset: "test", Classes: []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}}
	if err := net.Save(dir, model.Metadata{Input: &in}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeGrayPNG writes a w×h grey PNG whose pixels are v at path.
func writeGrayPNG(t *testing.T, path string, w, h int, v uint8) {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = v + uint8(i)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// predictJSON runs predict --json and returns its array's raw elements.
func predictJSON(t *testing.T, args ...string) []map[string]json.RawMessage {
	t.Helper()
	code, text := run(t, append([]string{"predict", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("predict: exit %d: %.500s", code, text)
	}
	// The progress lines share run's buffer: the JSON starts at its array.
	if i := strings.Index(text, "[\n"); i >= 0 {
		text = text[i:]
	}
	var out []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%v: %.500s", err, text)
	}
	return out
}

// surrogateEscape matches PEP 383's escape of one undecodable byte.
var surrogateEscape = regexp.MustCompile(`\\udc([89a-fA-F][0-9a-fA-F])`)

// fsdecodedJSON reads a JSON string literal as Python's json.load and
// os.fsencode together do: each \udcXX escape (U+DC00 + b) is the byte b,
// everything else is the JSON string's UTF-8.
func fsdecodedJSON(t *testing.T, lit json.RawMessage) string {
	t.Helper()
	s := string(lit)
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		t.Fatalf("not a JSON string: %s", s)
	}
	s = s[1 : len(s)-1]
	var out []byte
	part := func(p string) {
		var v string
		if err := json.Unmarshal([]byte(`"`+p+`"`), &v); err != nil {
			t.Fatalf("%q: %v", p, err)
		}
		out = append(out, v...)
	}
	last := 0
	for _, m := range surrogateEscape.FindAllStringSubmatchIndex(s, -1) {
		part(s[last:m[0]])
		b, _ := strconv.ParseUint(s[m[2]:m[3]], 16, 8)
		out = append(out, byte(b))
		last = m[1]
	}
	part(s[last:])
	return string(out)
}

// predict --json names each image so that the name finds the file again:
// a name that is valid UTF-8 is "path" as given, with no "path_bytes"; one
// that is not keeps its exact bytes in "path_bytes" (base64) and in "path"
// as Python's surrogateescape writes it, and both name the file (os.Stat
// finds it), where "path" used to hold U+FFFD in place of the bytes.
func TestPredictJSONKeepsFileNamesThatAreNotUTF8(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("the filesystem refuses names that are not UTF-8")
	}
	m := savePredictModel(t, model.TBMNIST, 1, 28, 28)
	dir := t.TempDir()
	names := []string{"plain.png", "caf\u00e9.png", "bad-\xff-name.png", "latin1-caf\xe9.png", "\xed\xa0\x80surrogate.png"}
	for i, n := range names {
		writeGrayPNG(t, filepath.Join(dir, n), 28, 28, uint8(40*i))
	}
	preds := predictJSON(t, "--model", m, dir)
	if len(preds) != len(names) {
		t.Fatalf("%d predictions for %d images", len(preds), len(names))
	}
	seen := map[string]bool{}
	for _, p := range preds {
		raw, hasBytes := p["path_bytes"]
		var name string
		if hasBytes {
			var b64 string
			if err := json.Unmarshal(raw, &b64); err != nil {
				t.Fatal(err)
			}
			b, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				t.Fatal(err)
			}
			name = string(b)
			if got := fsdecodedJSON(t, p["path"]); got != name {
				t.Errorf("path %s reads as %q by surrogateescape, path_bytes as %q", p["path"], got, name)
			}
		} else if err := json.Unmarshal(p["path"], &name); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(name); err != nil {
			t.Errorf("the name %q from %s names no file: %v", name, p["path"], err)
		}
		if hasBytes == utf8.ValidString(name) {
			t.Errorf("%q: path_bytes present = %v", name, hasBytes)
		}
		seen[filepath.Base(name)] = true
	}
	for _, n := range names {
		if !seen[n] {
			t.Errorf("no prediction names %q", n)
		}
	}
}

// predict reads and labels images a batch at a time, a bounded number of
// bytes of pixels each: 200 hard links of one 1×1 PNG on a model reading
// 1×1024×1024 images (4 MiB of float32 each, 800 MiB together) are
// labelled, every one alike and in input order, by a process (with a soft
// memory limit of 256 MiB) whose peak resident memory stays under half of
// what holding them all takes; it held them all at once, over the limit,
// and was killed for it at 4096×4096.
func TestPredictBatchesByBytes(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 200 images of 1024×1024")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads the child's peak resident memory from /proc")
	}
	const n, side = 200, 1024
	spec := model.Spec{Name: "pool-linear", Layers: []model.LayerSpec{model.AvgPool2d(16, 16), model.Flatten(), model.Linear(10)}}
	m := savePredictModel(t, spec, 1, side, side)
	dir := t.TempDir()
	first := filepath.Join(dir, "img-000.png")
	writeGrayPNG(t, first, 1, 1, 200)
	for i := 1; i < n; i++ {
		if err := os.Link(first, filepath.Join(dir, fmt.Sprintf("img-%03d.png", i))); err != nil {
			t.Skip("no hard links here:", err)
		}
	}
	cmd := exec.Command(os.Args[0], "predict", "--model", m, dir)
	// A soft memory limit of 256 MiB makes the collector keep the heap
	// near what is live, whatever the pace of the decoding's garbage: what
	// is left is what predict holds at once.
	cmd.Env = append(os.Environ(), "DPTUNE_TEST_MAIN=1", "GOMEMLIMIT=256MiB", "GOGC=100")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The child's own peak, VmHWM of its address space, read until it
	// ends (getrusage's ru_maxrss would also count this test process's
	// peak, which the child inherits at exec).
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var peak int64
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("predict: %v: %s", err, stderr.String())
			}
			running = false
		case <-time.After(5 * time.Millisecond):
			peak = max(peak, vmHWM(status))
		}
	}
	all := int64(n) * side * side * 4
	t.Logf("peak resident memory %d MiB; the %d images' float32 pixels are %d MiB", peak>>20, n, all>>20)
	if peak >= all/2 {
		t.Errorf("peak resident memory %d MiB, not under half the %d MiB of all the images at once", peak>>20, all>>20)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines for %d images", len(lines), n)
	}
	for i, l := range lines {
		f := strings.Split(l, "\t")
		if len(f) != 3 || f[0] != filepath.Join(dir, fmt.Sprintf("img-%03d.png", i)) || f[1] != strings.Split(lines[0], "\t")[1] || f[2] != strings.Split(lines[0], "\t")[2] {
			t.Fatalf("line %d: %q, first %q", i, l, lines[0])
		}
	}
}

// vmHWM returns the peak resident memory (VmHWM) in a /proc/PID/status
// file, in bytes; 0 when it cannot be read (the process has ended).
func vmHWM(status string) int64 {
	b, err := os.ReadFile(status)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" && f[2] == "kB" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}
