package main

import (
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
