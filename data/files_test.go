//go:build unix

package data

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/internal/fsx/fsxtest"
)

// writeMNIST writes an MNIST directory of nTrain and nTest blank examples.
func writeMNIST(t *testing.T, nTrain, nTest int) string {
	t.Helper()
	dir := t.TempDir()
	for _, s := range []struct {
		prefix string
		n      int
	}{{"train", nTrain}, {"t10k", nTest}} {
		files := map[string][]byte{
			s.prefix + "-images-idx3-ubyte": idxBytes(0x803, []uint32{uint32(s.n), 28, 28}, make([]byte, 784*s.n)),
			s.prefix + "-labels-idx1-ubyte": idxBytes(0x801, []uint32{uint32(s.n)}, make([]byte, s.n)),
		}
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// A test set of no examples has no accuracy: it is refused, naming the
// file, not reported as accuracy 0.
func TestLoadMNISTRefusesEmptyTestSet(t *testing.T) {
	if _, _, err := LoadMNIST(writeMNIST(t, 3, 2)); err != nil {
		t.Fatalf("3 training and 2 test examples: %v", err)
	}
	_, _, err := LoadMNIST(writeMNIST(t, 3, 0))
	if err == nil || !strings.Contains(err.Error(), "t10k-labels-idx1-ubyte") || !strings.Contains(err.Error(), "no examples") {
		t.Fatalf("empty test set: %v", err)
	}
}

// A data file that is a FIFO is refused at once, not waited on in open(2).
func TestLoadMNISTRefusesFIFO(t *testing.T) {
	dir := writeMNIST(t, 3, 2)
	p := filepath.Join(dir, "t10k-images-idx3-ubyte")
	os.Remove(p)
	fsxtest.Mkfifo(t, p)
	err := fsxtest.Within(t, func() error { _, _, err := LoadMNIST(dir); return err })
	if !errors.Is(err, fsx.ErrNotRegular) || !strings.Contains(err.Error(), p) {
		t.Fatalf("FIFO data file: %v", err)
	}
}
