package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/model"
)

// runPredict runs dptune with stdin as its standard input and returns its
// exit status, standard output and standard error (ending with the error
// line main prints).
func runPredict(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	root := newRoot()
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		errOut.WriteString("dptune: " + err.Error() + "\n")
	}
	return exitCode(err), out.String(), errOut.String()
}

// predictedPaths reads the paths of a predict --json array.
func predictedPaths(t *testing.T, js string) []string {
	t.Helper()
	var preds []struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(js), &preds); err != nil {
		t.Fatalf("%v: %.300s", err, js)
	}
	var out []string
	for _, p := range preds {
		out = append(out, p.Path)
	}
	return out
}

// An image that cannot be read ends predict with exit 2 once every image
// before it is printed: the lines of the four images before it, or with
// --json an array left unclosed (no JSON reader takes it for the whole
// answer) whose four elements are whole — closing it with "]" reads them
// — and the error names the file, on one line.
func TestPredictPartialOutputOnError(t *testing.T) {
	m := savePredictModel(t, model.TBMNIST, 1, 28, 28)
	dir := t.TempDir()
	var files []string
	for i := range 7 {
		f := filepath.Join(dir, fmt.Sprintf("%d.png", i))
		writeGrayPNG(t, f, 28, 28, uint8(30*i))
		files = append(files, f)
	}
	bad := files[4]
	if err := os.WriteFile(bad, []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runPredict(t, "", "predict", "--model", m, "--json", dir)
	last := errOut[strings.LastIndex(strings.TrimSuffix(errOut, "\n"), "\n")+1:]
	if code != 2 || !strings.Contains(last, bad) || !strings.HasPrefix(last, "dptune: ") {
		t.Fatalf("--json: exit %d, last line %q; want 2 naming %s", code, last, bad)
	}
	if json.Valid([]byte(out)) {
		t.Errorf("the partial output is valid JSON: %s", out)
	}
	if got := predictedPaths(t, out+"\n]"); !slices.Equal(got, files[:4]) {
		t.Errorf("the partial array, closed, holds %q; want %q", got, files[:4])
	}
	code, out, _ = runPredict(t, "", "predict", "--model", m, dir)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 2 || len(lines) != 4 {
		t.Fatalf("text: exit %d, %d lines %q; want 2 and 4", code, len(lines), out)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, files[i]+"\t") {
			t.Errorf("line %d: %q, want %s first", i, l, files[i])
		}
	}
}

// --files-from reads the paths from a file or standard input, one a line
// or NUL-ended with --null, empty entries skipped, and labels them as the
// same paths given as arguments; an empty list prints nothing, or the
// empty array with --json; misuse and a missing list exit 2 with one
// line.
func TestPredictFilesFrom(t *testing.T) {
	m := savePredictModel(t, model.TBMNIST, 1, 28, 28)
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		f := filepath.Join(dir, fmt.Sprintf("img %d.png", i)) // a space: the list splits on lines only
		writeGrayPNG(t, f, 28, 28, uint8(50*i))
		files = append(files, f)
	}
	code, want, _ := runPredict(t, "", append([]string{"predict", "--model", m, "--json"}, files...)...)
	if code != 0 {
		t.Fatalf("predict: exit %d", code)
	}
	lines := strings.Join(files, "\n") + "\n\n"
	nul := strings.Join(files, "\x00") // the last entry unterminated
	list := filepath.Join(t.TempDir(), "list")
	if err := os.WriteFile(list, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, stdin string
		args        []string
	}{
		{"a file", "", []string{"--files-from", list}},
		{"standard input", lines, []string{"--files-from", "-"}},
		{"NUL-ended", nul, []string{"--files-from", "-", "--null"}},
	} {
		code, out, errOut := runPredict(t, tc.stdin, append([]string{"predict", "--model", m, "--json"}, tc.args...)...)
		if code != 0 || out != want {
			t.Errorf("%s: exit %d, %q\n%s\nwant\n%s", tc.name, code, errOut, out, want)
		}
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--json", "--files-from", empty}, "[]\n"},
		{[]string{"--json", "--files-from", "-"}, "[]\n"},
		{[]string{"--files-from", empty}, ""},
	} {
		code, out, errOut := runPredict(t, "", append([]string{"predict", "--model", m}, tc.args...)...)
		if code != 0 || out != tc.want || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0 and %q", tc.args, code, out, errOut, tc.want)
		}
		if strings.Contains(strings.Join(tc.args, " "), "json") && !json.Valid([]byte(out)) {
			t.Errorf("%v: %q is not JSON", tc.args, out)
		}
	}
	for _, args := range [][]string{
		{"--files-from", list, files[0]},
		{"--null", files[0]},
		{"--files-from", filepath.Join(dir, "no-list")},
	} {
		code, out, errOut := runPredict(t, "", append([]string{"predict", "--model", m}, args...)...)
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and one line", args, code, out, errOut)
		}
	}
	// A listed path that does not exist, read from a pipe, is found when
	// reached, after the images before it are printed.
	missing := filepath.Join(dir, "missing.png")
	code, out, errOut := runPredict(t, files[0]+"\n"+missing+"\n"+files[1]+"\n", "predict", "--model", m, "--files-from", "-")
	if code != 2 || strings.Count(out, "\n") != 1 || !strings.HasPrefix(out, files[0]+"\t") || !strings.Contains(errOut, missing) {
		t.Errorf("a missing listed path: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// orderedWriter records what each of two writers was given, in order.
type orderedWriter struct {
	log  *[]string
	name string
}

func (w orderedWriter) Write(p []byte) (int, error) {
	for _, l := range strings.SplitAfter(string(p), "\n") {
		if l != "" {
			*w.log = append(*w.log, w.name+": "+l)
		}
	}
	return len(p), nil
}

// predict prints each batch before it reads the next, and off a terminal
// writes one progress line per batch: on a model reading 1×1024×1024
// images (a batch is 15 of them: 64 MiB of float32 pixels, 4 MiB each)
// 32 images are printed as 15, 15 and 2 lines, each batch after its
// progress line, which counts the images so far of the total and the
// images per second.
func TestPredictPrintsEachBatchWithAProgressLine(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 32 images at 1024×1024")
	}
	const n, side = 32, 1024
	spec := model.Spec{Name: "pool-linear", Layers: []model.LayerSpec{model.AvgPool2d(16, 16), model.Flatten(), model.Linear(10)}}
	m := savePredictModel(t, spec, 1, side, side)
	dir := t.TempDir()
	for i := range n {
		writeGrayPNG(t, filepath.Join(dir, fmt.Sprintf("img-%02d.png", i)), 2, 2, uint8(i))
	}
	var log []string
	root := newRoot()
	root.SetOut(orderedWriter{&log, "out"})
	root.SetErr(orderedWriter{&log, "err"})
	root.SetArgs([]string{"predict", "--model", m, dir})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	progress := regexp.MustCompile(`^err: images  \((\d+)/32\) \[[0-9.]+m?s, [0-9]+ images/s\]\n$`)
	var shape []string // "p15" for a progress line at 15, "o" for a prediction
	for _, l := range log {
		if m := progress.FindStringSubmatch(l); m != nil {
			shape = append(shape, "p"+m[1])
		} else if strings.HasPrefix(l, "out: "+filepath.Join(dir, "img-")) {
			shape = append(shape, "o")
		} else {
			t.Errorf("unexpected output %q", l)
		}
	}
	want := slices.Concat([]string{"p15"}, slices.Repeat([]string{"o"}, 15), []string{"p30"}, slices.Repeat([]string{"o"}, 15), []string{"p32", "o", "o"})
	if !slices.Equal(shape, want) {
		t.Errorf("output in the order %v, want %v", shape, want)
	}
}
