package data

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

// Fashion-MNIST as Debian installs it: 60,000 training and 10,000 test
// images, 6,000 and 1,000 of each class (Xiao, Rasul & Vollgraf 2017,
// §3), pixels left in [0, 1] with the training set's published mean
// 0.2860 and standard deviation 0.3530 (the constants torchvision
// recipes normalise Fashion-MNIST with).
func TestLoadFashionMNISTReal(t *testing.T) {
	dir, err := fashionMNISTDir()
	if err != nil {
		t.Skipf("Fashion-MNIST not installed: %v", err)
	}
	train, test, err := LoadFashionMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 60000 || test.N != 10000 || train.C != 1 || train.H != 28 || train.W != 28 || train.Classes != 10 {
		t.Fatalf("shapes: train %d×%d×%d×%d, test %d", train.N, train.C, train.H, train.W, test.N)
	}
	for _, d := range []struct {
		set  *Dataset
		each int
	}{{train, 6000}, {test, 1000}} {
		var count [10]int
		for _, y := range d.set.Y {
			count[y]++
		}
		for c, n := range count {
			if n != d.each {
				t.Errorf("%s: class %d (%s) has %d images, want %d", d.set.Name, c, FashionMNISTClasses[c], n, d.each)
			}
		}
	}
	var s, s2 float64
	for _, v := range train.X {
		if v < 0 || v > 1 {
			t.Fatalf("pixel %v outside [0, 1]", v)
		}
		s += float64(v)
		s2 += float64(v) * float64(v)
	}
	n := float64(len(train.X))
	mean, sd := s/n, math.Sqrt(s2/n-(s/n)*(s/n))
	if math.Abs(mean-0.2860) > 5e-4 || math.Abs(sd-0.3530) > 5e-4 {
		t.Errorf("training pixels: mean %.4f sd %.4f, want 0.2860 and 0.3530", mean, sd)
	}
}

// Fashion-MNIST files in another directory are read from there, with the
// pixels scaled to [0, 1] and not normalised, and named as the dataset.
func TestLoadFashionMNISTFromDir(t *testing.T) {
	dir := t.TempDir()
	img := make([]byte, 784*3)
	img[0], img[784+5] = 255, 51
	files := map[string][]byte{
		"train-images-idx3-ubyte": idxBytes(0x803, []uint32{3, 28, 28}, img),
		"train-labels-idx1-ubyte": idxBytes(0x801, []uint32{3}, []byte{9, 0, 3}),
		"t10k-images-idx3-ubyte":  idxBytes(0x803, []uint32{1, 28, 28}, make([]byte, 784)),
		"t10k-labels-idx1-ubyte":  idxBytes(0x801, []uint32{1}, []byte{1}),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), gzipped(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name := range files {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(dir, name+".gz")); err != nil {
			t.Fatal(err)
		}
	}
	train, test, err := LoadFashionMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 3 || test.N != 1 || train.X[0] != 1 || train.X[784+5] != 51.0/255 || train.Y[0] != 9 || train.Name != "fashion-mnist/train" {
		t.Errorf("read %d and %d examples, pixels %v %v, label %d, name %q", train.N, test.N, train.X[0], train.X[784+5], train.Y[0], train.Name)
	}
	k, ok := Lookup("fashion-mnist")
	if !ok || k.NominalN != 60000 || len(k.ClassNames) != 10 || k.ClassNames[9] != "Ankle boot" {
		t.Errorf("registered as %+v", k)
	}
}
