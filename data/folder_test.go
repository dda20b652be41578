package data

import (
	"context"
	"image"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeImage writes img to path as PNG (or JPEG for a .jpg name).
func writeImage(t *testing.T, path string, img image.Image) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if strings.HasSuffix(path, ".jpg") {
		err = jpeg.Encode(f, img, &jpeg.Options{Quality: 100})
	} else {
		err = png.Encode(f, img)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// grey is a w×h grey image of constant value v with pixel (0, 0) at 255.
func grey(w, h int, v uint8) image.Image {
	g := image.NewGray(image.Rect(0, 0, w, h))
	for i := range g.Pix {
		g.Pix[i] = v
	}
	g.Pix[0] = 255
	return g
}

// folder writes a two-class folder: train/a holds 2 images, train/b 1,
// test one each; the file names sort against their writing order.
func folder(t *testing.T) string {
	dir := t.TempDir()
	writeImage(t, filepath.Join(dir, "train", "b", "x.png"), grey(4, 4, 30))
	writeImage(t, filepath.Join(dir, "train", "a", "z.png"), grey(4, 4, 20))
	writeImage(t, filepath.Join(dir, "train", "a", "y.png"), grey(4, 4, 10))
	writeImage(t, filepath.Join(dir, "test", "a", "t.png"), grey(4, 4, 40))
	writeImage(t, filepath.Join(dir, "test", "b", "u.png"), grey(4, 4, 50))
	return dir
}

// An image folder reads as ImageFolder does: classes sorted by name,
// examples by class then file name whatever the parallelism, pixels /255
// (or normalised by the given public constants).
func TestLoadFolder(t *testing.T) {
	dir := folder(t)
	for _, workers := range []int{1, 4} {
		train, test, classes, err := LoadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(classes, ",") != "a,b" || train.N != 3 || test.N != 2 || train.Classes != 2 {
			t.Fatalf("classes %v, %d training and %d test images", classes, train.N, test.N)
		}
		for i, want := range []struct {
			label uint8
			v     float32
		}{{0, 10}, {0, 20}, {1, 30}} {
			x := train.Example(i)
			if train.Y[i] != want.label || x[0] != 1 || x[5] != want.v/255 {
				t.Errorf("workers %d: example %d: label %d, pixels %v %v; want label %d, 1 and %v", workers, i, train.Y[i], x[0], x[5], want.label, want.v/255)
			}
		}
	}
	train, _, _, err := LoadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4, Mean: []float64{0.5}, Std: []float64{0.25}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := train.Example(0)[0], float32((1-0.5)/0.25); got != want {
		t.Errorf("normalised white pixel %v, want %v", got, want)
	}
	// RGB: a grey image gives three equal channels.
	rgb, _, _, err := LoadFolder(context.Background(), dir, FolderOptions{C: 3, H: 4, W: 4})
	if err != nil {
		t.Fatal(err)
	}
	x := rgb.Example(1)
	if x[5] != 20.0/255 || x[16+5] != x[5] || x[32+5] != x[5] {
		t.Errorf("RGB of grey 20: %v %v %v", x[5], x[16+5], x[32+5])
	}
}

// Images of another size are resized bilinearly (a constant image stays
// constant), or refused under NoResize with the file's path; JPEG reads.
func TestLoadFolderResize(t *testing.T) {
	dir := folder(t)
	big := image.NewRGBA(image.Rect(0, 0, 9, 7))
	for i := 0; i < len(big.Pix); i += 4 {
		big.Pix[i], big.Pix[i+1], big.Pix[i+2], big.Pix[i+3] = 200, 100, 0, 255
	}
	path := filepath.Join(dir, "train", "b", "w.jpg")
	writeImage(t, path, big)
	train, _, _, err := LoadFolder(context.Background(), dir, FolderOptions{C: 3, H: 4, W: 4})
	if err != nil {
		t.Fatal(err)
	}
	x := train.Example(2) // b/w.jpg sorts before b/x.png
	for _, c := range []struct {
		ch   int
		want float64
	}{{0, 200}, {1, 100}, {2, 0}} {
		for k := range 16 {
			if v := float64(x[c.ch*16+k]) * 255; math.Abs(v-c.want) > 3 { // JPEG rounding
				t.Fatalf("channel %d pixel %d = %v, want ≈ %v", c.ch, k, v, c.want)
			}
		}
	}
	_, _, _, err = LoadFolder(context.Background(), dir, FolderOptions{C: 3, H: 4, W: 4, NoResize: true})
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "9×7") {
		t.Errorf("NoResize: %v", err)
	}
}

// Bad folders are refused with the offending path.
func TestLoadFolderRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		mutate func(dir string) error
		want   string
	}{
		"corrupt": {func(d string) error {
			return os.WriteFile(filepath.Join(d, "train", "a", "q.png"), []byte("not an image"), 0o644)
		}, "q.png: not a PNG or JPEG image"},
		"empty class":   {func(d string) error { return os.MkdirAll(filepath.Join(d, "train", "c"), 0o755) }, "has no directory in"},
		"extra test":    {func(d string) error { return os.MkdirAll(filepath.Join(d, "test", "c"), 0o755) }, `class "c" is not a training class`},
		"empty train":   {func(d string) error { return os.RemoveAll(filepath.Join(d, "train", "a", "y.png")) }, ""},
		"no test split": {func(d string) error { return os.RemoveAll(filepath.Join(d, "test")) }, "test"},
	} {
		dir := folder(t)
		if err := c.mutate(dir); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := LoadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4})
		if name == "empty train" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
	dir := folder(t)
	if err := os.MkdirAll(filepath.Join(dir, "test", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "train", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := LoadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4}); err == nil || !strings.Contains(err.Error(), `class "c" has no images`) {
		t.Errorf("empty class: %v", err)
	}
	for _, o := range []FolderOptions{{C: 2, H: 4, W: 4}, {C: 1, H: 0, W: 4}, {C: 3, H: 4, W: 4, Mean: []float64{0}, Std: []float64{1}}, {C: 1, H: 4, W: 4, Mean: []float64{0}, Std: []float64{0}}} {
		if _, _, _, err := LoadFolder(context.Background(), folder(t), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	if c, h, w, err := FolderShape(folder(t)); err != nil || c != 1 || h != 4 || w != 4 {
		t.Errorf("FolderShape = %d, %d, %d, %v; want 1, 4, 4", c, h, w, err)
	}
}
