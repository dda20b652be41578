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
