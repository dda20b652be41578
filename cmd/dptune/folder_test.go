package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/job"
)

// writeMNISTFolder writes the first nTrain training and nTest test images
// of MNIST as an ImageFolder of grey PNGs (classes "0" … "9").
func writeMNISTFolder(t *testing.T, dir string, nTrain, nTest int) {
	t.Helper()
	src, err := job.Dataset("mnist", "")
	if err != nil {
		t.Fatal(err)
	}
	train, test, err := src.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		split string
		n     int
		x     []float32
		y     []uint8
	}{{"train", nTrain, train.X, train.Y}, {"test", nTest, test.X, test.Y}} {
		for i := range s.n {
			img := image.NewGray(image.Rect(0, 0, 28, 28))
			for k := range img.Pix {
				// The loader scales MNIST's bytes to [0, 1] and normalises
				// them with MNIST's published mean and deviation.
				img.Pix[k] = uint8((float64(s.x[i*784+k])*data.MNISTStd+data.MNISTMean)*255 + 0.5)
			}
			path := filepath.Join(dir, s.split, fmt.Sprint(s.y[i]), fmt.Sprintf("%05d.png", i))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := png.Encode(f, img); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
}

// An ImageFolder of MNIST PNGs trains like MNIST: tb-mnist chosen by the
// images' shape, the nominal size declared, the dataset named by its
// folder in the report; refusals come before any work.
func TestFolderDatasetTrains(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on 2,000 images")
	}
	dir := t.TempDir()
	writeMNISTFolder(t, dir, 2000, 200)
	out := filepath.Join(t.TempDir(), "m")
	code, text := run(t, "train", "--dataset", "folder", "--data-dir", dir, "--nominal-size", "2000", "--epochs", "3", "--batch-size", "100",
		"--epsilon", "8", "--seed", "1", "--mean", "0.1307", "--std", "0.3081", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, text)
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Dataset     string  `json:"dataset"`
		NominalSize int     `json:"nominal_size"`
		Accuracy    float64 `json:"test_accuracy"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(rep.Dataset, "folder:") || rep.NominalSize != 2000 || rep.Accuracy < 0.5 {
		t.Errorf("report: dataset %q, nominal size %d, test accuracy %v", rep.Dataset, rep.NominalSize, rep.Accuracy)
	}
	for _, args := range [][]string{
		{"train", "--dataset", "folder", "--data-dir", dir},                                            // no nominal size
		{"train", "--dataset", "folder", "--nominal-size", "2000"},                                     // no directory
		{"train", "--dataset", "folder", "--data-dir", dir, "--nominal-size", "2000", "--mean", "0.1"}, // --mean without --std
		{"train", "--dataset", "folder", "--data-dir", dir, "--nominal-size", "2000", "--mean", "0.1,0.2", "--std", "1,1"},
		{"train", "--mean", "0.1", "--std", "0.3"}, // not a folder
		{"train", "--dataset", "folder", "--data-dir", filepath.Join(dir, "train"), "--nominal-size", "2000"},
	} {
		if code, text := run(t, args...); code != 2 || strings.Count(strings.TrimSpace(text), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want 2 and one line", args, code, text)
		}
	}
}

// predict labels the test images of the folder with the model trained on
// it: the labels are the folder's class names, the probabilities sum to
// 1, and most labels match the directory each image came from; bad paths
// exit 2 with one line.
func TestPredictFolderImages(t *testing.T) {
	if testing.Short() {
		t.Skip("trains on 2,000 images")
	}
	dir := t.TempDir()
	writeMNISTFolder(t, dir, 2000, 200)
	out := filepath.Join(t.TempDir(), "m")
	if code, text := run(t, "train", "--dataset", "folder", "--data-dir", dir, "--nominal-size", "2000", "--epochs", "3", "--batch-size", "100",
		"--epsilon", "8", "--seed", "1", "--mean", "0.1307", "--std", "0.3081", "--out", out); code != 0 {
		t.Fatalf("train: exit %d: %s", code, text)
	}
	code, text := run(t, "predict", "--model", out, "--json", filepath.Join(dir, "test"))
	if code != 0 {
		t.Fatalf("predict: exit %d: %.300s", code, text)
	}
	var preds []struct {
		Path          string    `json:"path"`
		Label         string    `json:"label"`
		Index         int       `json:"index"`
		Probabilities []float64 `json:"probabilities"`
	}
	// The progress bar shares run's buffer: the JSON starts at its array.
	if i := strings.Index(text, "[\n"); i >= 0 {
		text = text[i:]
	}
	if err := json.Unmarshal([]byte(text), &preds); err != nil {
		t.Fatalf("%v: %.300s", err, text)
	}
	if len(preds) != 200 {
		t.Fatalf("%d predictions, want 200", len(preds))
	}
	right := 0
	for _, p := range preds {
		var sum float64
		for _, q := range p.Probabilities {
			sum += q
		}
		if len(p.Probabilities) != 10 || sum < 0.999 || sum > 1.001 || p.Label != fmt.Sprint(p.Index) {
			t.Fatalf("prediction %+v", p)
		}
		if filepath.Base(filepath.Dir(p.Path)) == p.Label {
			right++
		}
	}
	if right < 100 {
		t.Errorf("%d of 200 labels match their class directory", right)
	}
	// The model exports with the folder's classes and the release's ε.
	st := filepath.Join(t.TempDir(), "m.safetensors")
	if code, text := run(t, "export", "--model", out, "--format", "safetensors", "--out", st); code != 0 {
		t.Fatalf("export: exit %d: %s", code, text)
	}
	b, err := os.ReadFile(st)
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
	if head.Meta["dataset"] == "" || head.Meta["classes"] != `["0","1","2","3","4","5","6","7","8","9"]` || head.Meta["epsilon"] == "" || head.Meta["nominal_size"] != "2000" {
		t.Errorf("exported metadata %v", head.Meta)
	}
	for _, args := range [][]string{
		{"export", "--model", out, "--format", "tflite", "--out", st},
		{"export", "--model", filepath.Join(dir, "missing"), "--out", st},
		{"predict", "--model", out},
		{"predict", "--model", filepath.Join(dir, "missing"), filepath.Join(dir, "test")},
		{"predict", "--model", out, filepath.Join(dir, "missing.png")},
		{"predict", "--model", out, out}, // a directory without images
	} {
		if code, text := run(t, args...); code != 2 || strings.Count(strings.TrimSpace(text), "\n") != 0 {
			t.Errorf("%v: exit %d, %q; want 2 and one line", args, code, text)
		}
	}
}

// firstFile is the first file, by name, of directory dir.
func firstFile(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("%s: %v", dir, err)
	}
	return filepath.Join(dir, entries[0].Name())
}

// writePNG writes img to path as PNG.
func writePNG(t *testing.T, path string, img image.Image) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

// modelArch reads the network and input shape a release's model.json
// states.
func modelArch(t *testing.T, out string) (name string, c, h, w, classes int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "model.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Arch struct {
			Name    string `json:"name"`
			C       int    `json:"channels"`
			H       int    `json:"height"`
			W       int    `json:"width"`
			Classes int    `json:"classes"`
		} `json:"arch"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m.Arch.Name, m.Arch.C, m.Arch.H, m.Arch.W, m.Arch.Classes
}

// trainFolder trains one epoch on the image folder dir of nominal size n,
// into a fresh directory it returns, with the exit status and output.
func trainFolder(t *testing.T, dir string, n int, extra ...string) (string, int, string) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "m")
	args := append([]string{"train", "--dataset", "folder", "--data-dir", dir, "--nominal-size", fmt.Sprint(n), "--epochs", "1", "--batch-size", "100",
		"--epsilon", "8", "--mean", "0.1307", "--std", "0.3081", "--out", out}, extra...)
	code, text := run(t, args...)
	return out, code, text
}

// H2: the network and its input shape are the public test split's. Two
// folders that differ in their first training image only — a 28×28 grey
// PNG against a 20×20 grey or a 28×28 RGB one — release the same network
// on the same 1×28×28 input (tb-mnist, chosen by the test images' shape).
func TestFolderShapeIsThePublicSplits(t *testing.T) {
	for name, first := range map[string]image.Image{
		"as written": nil,
		"grey 20×20": image.NewGray(image.Rect(0, 0, 20, 20)),
		"RGB 28×28":  image.NewRGBA(image.Rect(0, 0, 28, 28)),
	} {
		dir := t.TempDir()
		writeMNISTFolder(t, dir, 300, 100)
		if first != nil {
			writePNG(t, firstFile(t, filepath.Join(dir, "train", "0")), first)
		}
		out, code, text := trainFolder(t, dir, 300, "--seed", "1")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, text)
		}
		if net, c, h, w, k := modelArch(t, out); net != "tb-mnist" || c != 1 || h != 28 || w != 28 || k != 10 {
			t.Errorf("first training image %s: model.json states %s on %d×%d×%d, %d classes; want tb-mnist on 1×28×28, 10", name, net, c, h, w, k)
		}
	}
}

// M2 and ImageFolder's public behaviour: a class whose only training
// image is removed trains (the neighbour folder also releases); a text
// file among the training images and a training class test/ does not have
// are left out and counted on the curator's terminal only, never in
// report.json. Class directories that are symbolic links (train/9 and
// test/9), images in a sub-directory (train/3/more/) and a link to an
// image are read: all 300 training images, so no count warning.
func TestFolderTrainsWhatItCan(t *testing.T) {
	dir := t.TempDir()
	writeMNISTFolder(t, dir, 300, 100)
	// train/9 and test/9 live elsewhere, linked.
	elsewhere := t.TempDir()
	for _, split := range []string{"train", "test"} {
		if err := os.Rename(filepath.Join(dir, split, "9"), filepath.Join(elsewhere, split+"9")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(elsewhere, split+"9"), filepath.Join(dir, split, "9")); err != nil {
			t.Fatal(err)
		}
	}
	// Half of train/3 moves to train/3/more/.
	three := filepath.Join(dir, "train", "3")
	entries, err := os.ReadDir(three)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(three, "more"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries[:len(entries)/2] {
		if err := os.Rename(filepath.Join(three, e.Name()), filepath.Join(three, "more", e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	// One image of train/2 is a link to its file, kept elsewhere.
	two := firstFile(t, filepath.Join(dir, "train", "2"))
	if err := os.Rename(two, filepath.Join(elsewhere, "two.png")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(elsewhere, "two.png"), two); err != nil {
		t.Fatal(err)
	}
	out, code, text := trainFolder(t, dir, 300, "--seed", "1")
	if code != 0 {
		t.Fatalf("links and sub-directories: exit %d: %s", code, text)
	}
	if _, _, _, _, k := modelArch(t, out); k != 10 || strings.Contains(text, "not the nominal") {
		t.Errorf("%d classes (want 10), output %s", k, text)
	}

	// Unusable training entries and an emptied class: trained, counted
	// for the curator only.
	if err := os.WriteFile(filepath.Join(dir, "train", "4", "notes.png"), []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	writePNG(t, filepath.Join(dir, "train", "extra", "x.png"), image.NewGray(image.Rect(0, 0, 28, 28)))
	eight := filepath.Join(dir, "train", "8")
	entries, err = os.ReadDir(eight)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries[1:] { // keep one image of class 8
		if err := os.Remove(filepath.Join(eight, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for _, emptied := range []bool{false, true} {
		if emptied {
			if err := os.Remove(filepath.Join(eight, entries[0].Name())); err != nil {
				t.Fatal(err)
			}
		}
		out, code, text := trainFolder(t, dir, 300)
		if code != 0 {
			t.Fatalf("class 8 emptied %v: exit %d: %s", emptied, code, text)
		}
		if !strings.Contains(text, "left out 2 entries of the training split") || !strings.Contains(text, "notes.png") || !strings.Contains(text, "curator-side") {
			t.Errorf("class 8 emptied %v: no curator's note of the 2 entries left out: %s", emptied, text)
		}
		rep, err := os.ReadFile(filepath.Join(out, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(rep), "left out") || strings.Contains(string(rep), "notes.png") {
			t.Errorf("report.json tells what was left out: %s", rep)
		}
		if _, _, _, _, k := modelArch(t, out); k != 10 {
			t.Errorf("class 8 emptied %v: %d classes, want 10", emptied, k)
		}
	}
}

// Requests the public split or the flags make impossible are refused
// with one line and exit 2 before any image is decoded: normalising
// constants that overflow float32 (N12), a folder or a test class whose
// name holds ESC or a bidirectional override (N19, named quoted, never
// raw), an empty test class (N16), a bad --image-shape.
func TestFolderRefusedBeforeWork(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "digits")
	writeMNISTFolder(t, dir, 200, 100)
	esc := filepath.Join(base, "esc\x1b[31mred")
	if err := os.Rename(dir, esc); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(base, "plain")
	writeMNISTFolder(t, plain, 200, 100)
	bidi := filepath.Join(base, "bidi")
	writeMNISTFolder(t, bidi, 200, 100)
	for _, split := range []string{"train", "test"} {
		if err := os.Rename(filepath.Join(bidi, split, "9"), filepath.Join(bidi, split, "9\u202egnp.exe")); err != nil {
			t.Fatal(err)
		}
	}
	empty := filepath.Join(base, "empty")
	writeMNISTFolder(t, empty, 200, 100)
	if err := os.MkdirAll(filepath.Join(empty, "test", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	folderArgs := func(dir string, extra ...string) []string {
		return append([]string{"train", "--dataset", "folder", "--data-dir", dir, "--nominal-size", "200", "--batch-size", "50", "--epochs", "1", "--epsilon", "1", "--out", filepath.Join(t.TempDir(), "m")}, extra...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{folderArgs(plain, "--mean", "0", "--std", "1e-300"), "standard deviation 1e-300"},
		{folderArgs(plain, "--mean", "1e6", "--std", "1"), "mean 1e+06"},
		{folderArgs(esc), `"esc\x1b[31mred"`},
		{folderArgs(bidi), `9\u202egnp.exe`},
		{folderArgs(empty), "test class x has no images"},
		{folderArgs(plain, "--image-shape", "2,28,28"), "1 (grey) or 3 (RGB) channels"},
		{folderArgs(plain, "--image-shape", "1,28"), "C,H,W"},
		{folderArgs(plain, "--image-shape", "1,20,20"), "no default network"},
		{[]string{"train", "--image-shape", "1,28,28"}, "apply to --dataset folder"},
	} {
		code, text := run(t, c.args...)
		if code != 2 || strings.Count(strings.TrimSpace(text), "\n") != 0 || !strings.Contains(text, c.want) ||
			strings.ContainsAny(text, "\x1b\u202e") || strings.Contains(text, "images (") {
			t.Errorf("%q: exit %d, %q; want 2 and one line containing %q, nothing decoded", c.args, code, text, c.want)
		}
	}
}
