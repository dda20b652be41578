package data

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/image/bmp"
	"golang.org/x/image/tiff"

	"github.com/dptune/dptune/internal/textsafe"
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
	// Under NoResize a training image of another size is left out and
	// counted (never refused: it is one private example); a test image of
	// another size is refused with its path.
	train, _, _, skips, err := loadFolder(context.Background(), dir, FolderOptions{C: 3, H: 4, W: 4, NoResize: true})
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 3 || skips.total() != 1 || skips.n[skipOtherSize] != 1 || skips.first[skipOtherSize] != path {
		t.Errorf("NoResize: %d training images, skips %v", train.N, &skips)
	}
	testPath := filepath.Join(dir, "test", "a", "s.jpg")
	writeImage(t, testPath, big)
	_, _, _, err = LoadFolder(context.Background(), dir, FolderOptions{C: 3, H: 4, W: 4, NoResize: true})
	if err == nil || !strings.Contains(err.Error(), testPath) || !strings.Contains(err.Error(), "9×7") {
		t.Errorf("NoResize, test image 9×7: %v", err)
	}
}

// Only the public split refuses: a test directory missing, an empty test
// class, an undecodable test file or too few classes are errors with the
// offending path; so are options no folder can be read with.
func TestLoadFolderRefusals(t *testing.T) {
	for name, c := range map[string]struct {
		mutate func(dir string) error
		want   string
	}{
		"corrupt test": {func(d string) error {
			return os.WriteFile(filepath.Join(d, "test", "a", "q.png"), []byte("not an image"), 0o644)
		}, "q.png: not a PNG, JPEG, GIF or TIFF image"},
		"empty test class": {func(d string) error { return os.MkdirAll(filepath.Join(d, "test", "c"), 0o755) }, `test class c has no images`},
		"no test split":    {func(d string) error { return os.RemoveAll(filepath.Join(d, "test")) }, "test"},
		"no train split":   {func(d string) error { return os.RemoveAll(filepath.Join(d, "train")) }, "train"},
		"one class":        {func(d string) error { return os.RemoveAll(filepath.Join(d, "test", "b")) }, "1 class directories, need at least 2"},
	} {
		dir := folder(t)
		if err := c.mutate(dir); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := LoadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4})
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line containing %q", name, err, c.want)
		}
	}
	for _, o := range []FolderOptions{{C: 2, H: 4, W: 4}, {C: 1, H: 0, W: 4}, {C: 3, H: 4, W: 4, Mean: []float64{0}, Std: []float64{1}},
		{C: 1, H: 4, W: 4, Mean: []float64{0}, Std: []float64{0}}, {C: 1, H: 4, W: 4, NominalN: -1}} {
		if _, _, _, err := LoadFolder(context.Background(), folder(t), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

// rgb is a w×h RGB image of constant colour (r, g, b).
func rgb(w, h int, r, g, b uint8) image.Image {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = r, g, b, 255
	}
	return img
}

// The classes and the default shape come from the public test split: two
// folders that differ in their first training image (20×20 grey against
// 9×7 RGB, or a training class test/ does not have) inspect alike, and
// load to tensors of the caller's shape.
func TestFolderShapeFromTestSplit(t *testing.T) {
	var infos []FolderInfo
	for _, first := range []image.Image{grey(20, 20, 90), rgb(9, 7, 200, 100, 0)} {
		dir := folder(t)
		writeImage(t, filepath.Join(dir, "train", "a", "0.png"), first) // sorts first
		writeImage(t, filepath.Join(dir, "train", "0", "0.png"), first) // a class test/ lacks
		info, err := InspectFolder(dir)
		if err != nil {
			t.Fatal(err)
		}
		infos = append(infos, info)
		train, _, classes, skips, err := loadFolder(context.Background(), dir, FolderOptions{C: info.C, H: info.H, W: info.W})
		if err != nil {
			t.Fatal(err)
		}
		// test/a/t.png is a 4×4 grey PNG: 1 channel, 4×4.
		if train.C != 1 || train.H != 4 || train.W != 4 || len(train.X) != train.N*16 || strings.Join(classes, ",") != "a,b" {
			t.Errorf("first training image %v: training set %d×%d×%d of %d floats, classes %v", first.Bounds(), train.C, train.H, train.W, len(train.X), classes)
		}
		if train.N != 4 || skips.n[skipNoClass] != 1 || skips.first[skipNoClass] != filepath.Join(dir, "train", "0") {
			t.Errorf("%d training images (want 4), skips %v", train.N, &skips)
		}
	}
	want := FolderInfo{Classes: []string{"a", "b"}, TestN: 2, C: 1, H: 4, W: 4, Format: "png"}
	for _, info := range infos {
		if strings.Join(info.Classes, ",") != "a,b" || info.TestN != want.TestN || info.C != want.C || info.H != want.H || info.W != want.W || info.Format != want.Format {
			t.Errorf("InspectFolder = %+v, want %+v", info, want)
		}
	}
	// The first test image (class a, first file) decides: an RGB 6×5 one
	// makes the shape 3×5×6.
	dir := folder(t)
	writeImage(t, filepath.Join(dir, "test", "a", "0.png"), rgb(6, 5, 1, 2, 3))
	if info, err := InspectFolder(dir); err != nil || info.C != 3 || info.H != 5 || info.W != 6 {
		t.Errorf("InspectFolder with a first 6×5 RGB test image = %+v, %v", info, err)
	}
}

// No training file refuses a run: an undecodable file, a text file, an
// image of another size under NoResize, an image of too many pixels, a
// class directory test/ lacks and a file outside any class are left out
// and counted, each kind with its first path, in the order of the
// listing; a class whose only image is removed still trains, and the
// curator's note says what was left out.
func TestLoadFolderSkipsTraining(t *testing.T) {
	dir := folder(t)
	train := filepath.Join(dir, "train")
	for name, body := range map[string]string{"a/q.png": "not an image", "a/r.txt": "text", "b/readme": "hello", "notes.txt": "outside a class"} {
		if err := os.WriteFile(filepath.Join(train, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeImage(t, filepath.Join(train, "extra", "e.png"), grey(4, 4, 1))
	// A 5000×1 image: 5000 pixels, header only checked against the bound.
	writeImage(t, filepath.Join(train, "b", "wide.png"), grey(5000, 1, 1))
	var notes []string
	o := FolderOptions{C: 1, H: 4, W: 4, Warn: func(s string) { notes = append(notes, s) }}
	d, _, _, err := LoadFolder(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	// a/y.png (10), a/z.png (20), b/wide.png (resized), b/x.png (30).
	if d.N != 4 || d.Y[0] != 0 || d.Y[1] != 0 || d.Y[2] != 1 || d.Y[3] != 1 || d.Example(0)[5] != 10.0/255 || d.Example(3)[5] != 30.0/255 {
		t.Errorf("training set: %d images, labels %v", d.N, d.Y)
	}
	_, _, _, skips, err := loadFolder(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if skips.n[skipNotImage] != 3 || skips.first[skipNotImage] != filepath.Join(train, "a", "q.png") ||
		skips.n[skipNoClass] != 2 || skips.first[skipNoClass] != filepath.Join(train, "notes.txt") || skips.total() != 5 {
		t.Errorf("skips %v; want 3 not images (first a/q.png) and 2 outside a class (first notes.txt)", &skips)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "left out 5 entries") || !strings.Contains(notes[0], "curator-side") || strings.Contains(notes[0], "\n") {
		t.Errorf("curator's notes %q", notes)
	}
	// Too many pixels, or another size under NoResize: left out.
	o.NoResize = true
	writeImage(t, filepath.Join(train, "b", "huge.png"), grey(4097, 4096, 0))
	d, _, _, skips, err = loadFolder(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if d.N != 3 || skips.n[skipOtherSize] != 1 || skips.n[skipTooLarge] != 1 || skips.first[skipTooLarge] != filepath.Join(train, "b", "huge.png") {
		t.Errorf("NoResize: %d images, skips %v", d.N, &skips)
	}
	// A class whose only training image is removed trains, empty, as
	// does a class whose training directory is missing altogether.
	for _, rm := range []string{filepath.Join(train, "b", "x.png"), filepath.Join(train, "b")} {
		dir := folder(t)
		rm = strings.Replace(rm, filepath.Dir(train), dir, 1)
		if err := os.RemoveAll(rm); err != nil {
			t.Fatal(err)
		}
		d, test, classes, err := LoadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4})
		if err != nil || d.N != 2 || d.Y[0] != 0 || d.Y[1] != 0 || d.Classes != 2 || test.N != 2 || len(classes) != 2 {
			t.Errorf("without %s: %v, %v", rm, d, err)
		}
	}
}

// An empty test class is found from the listing, before any training image
// is decoded (the progress of the training split never starts).
func TestLoadFolderEmptyTestClassFirst(t *testing.T) {
	dir := folder(t)
	if err := os.MkdirAll(filepath.Join(dir, "test", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeImage(t, filepath.Join(dir, "train", "c", "v.png"), grey(4, 4, 1))
	var splits []string
	_, _, _, err := LoadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4, Workers: 1, Progress: func(split string, _, _ int) { splits = append(splits, split) }})
	if err == nil || !strings.Contains(err.Error(), "test class c has no images") {
		t.Fatalf("empty test class: %v", err)
	}
	if len(splits) != 0 {
		t.Errorf("images decoded before the refusal: %v", splits)
	}
}

// The training split holds at most 2 × the nominal size, and no more than
// fits half the runtime's memory limit beside the test split; the images
// past the bound are left out and counted. A nominal size that cannot fit
// is refused before anything is decoded. A first training image of
// 4096×4096 costs 16 floats in a 4×4 folder (the shape is the test
// split's).
func TestLoadFolderMemoryBound(t *testing.T) {
	dir := folder(t)
	writeImage(t, filepath.Join(dir, "train", "a", "0.png"), grey(4096, 4096, 7))
	for i := range 5 {
		writeImage(t, filepath.Join(dir, "train", "b", fmt.Sprintf("p%d.png", i)), grey(1, 1, 9))
	}
	// 9 training images: a/0, a/y, a/z, b/p0 … b/p4, b/x.
	o := FolderOptions{C: 1, H: 4, W: 4, NominalN: 3}
	d, _, _, skips, err := loadFolder(context.Background(), dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if d.N != 6 || len(d.X) != 6*16 || skips.n[skipPastBound] != 3 || skips.first[skipPastBound] != filepath.Join(dir, "train", "b", "p3.png") {
		t.Errorf("nominal 3: %d images in %d floats, skips %v; want 6 (2 × 3) and 3 past the bound from b/p3.png", d.N, len(d.X), &skips)
	}
	if got := d.Example(0)[5]; got != 7.0/255 {
		t.Errorf("the 4096×4096 image read as %v, want %v", got, 7.0/255)
	}
	// A memory limit of 2 × 64 × 8 bytes: 8 images of 4×4 float32 (64
	// bytes each); the 2 test images leave 6 for training.
	old := debug.SetMemoryLimit(2 * 64 * 8)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	if got := FolderMemoryLimit(); got != 64*8 {
		t.Fatalf("FolderMemoryLimit = %d, want %d", got, 64*8)
	}
	o.NominalN = 5
	if got := o.MaxTrain(2); got != 6 {
		t.Errorf("MaxTrain(2) = %d, want 6", got)
	}
	d, _, _, skips, err = loadFolder(context.Background(), dir, o)
	if err != nil || d.N != 6 || skips.n[skipPastBound] != 3 {
		t.Errorf("memory bound: %v images, skips %v, %v", d, &skips, err)
	}
	o.NominalN = 7 // 7 + 2 test images > 8
	if _, _, _, err := LoadFolder(context.Background(), dir, o); err == nil || !strings.Contains(err.Error(), "2 test and 7 (nominal) training images of 1×4×4 need") {
		t.Errorf("nominal size beyond memory: %v", err)
	}
}

// Normalising constants that map a pixel beyond ±1000 are refused (a
// deviation of 1e-300 makes every pixel overflow float32 to ±Inf, and the
// loss NaN); published ones pass, and the bound is inclusive.
func TestFolderOptionsNormalisationBound(t *testing.T) {
	for _, c := range []struct {
		mean, std float64
		ok        bool
	}{
		{0.1307, 0.3081, true}, // MNIST
		{0, 1e-3, true},        // pixels up to 1/1e-3 = 1000
		{0, 0.999e-3, false},
		{0, 1e-300, false},
		{1e6, 1, false},
		{-1e30, 1e30, true}, // maps [0, 1] to about 1
		{math.NaN(), 1, false},
		{0, math.Inf(1), false},
	} {
		err := FolderOptions{C: 1, H: 4, W: 4, Mean: []float64{c.mean}, Std: []float64{c.std}}.Check()
		if (err == nil) != c.ok || (err != nil && strings.Contains(err.Error(), "\n")) {
			t.Errorf("mean %g, std %g: %v; want ok %v", c.mean, c.std, err, c.ok)
		}
	}
	// Every accepted option set maps every byte to a finite float32.
	o := FolderOptions{C: 1, H: 1, W: 1, Mean: []float64{0}, Std: []float64{1e-3}}
	for v := range 256 {
		if x := o.scale(0, uint8(v)); math.IsInf(float64(x), 0) || math.IsNaN(float64(x)) || math.Abs(float64(x)) > 1000 {
			t.Fatalf("scale(%d) = %v", v, x)
		}
	}
}

// Images are read in the formats FolderFormats lists, by content: GIF (its
// first frame), TIFF, and a GIF named .png read as their pixels; a BMP —
// whose decoder this test registers, as another import of the program
// might — is not one of them: left out of the training split, refused in
// the test split with the formats read.
func TestFolderFormats(t *testing.T) {
	dir := folder(t)
	enc := map[string]func(*os.File, image.Image) error{
		"a/g.gif":   func(f *os.File, m image.Image) error { return gif.Encode(f, paletted(m), nil) },
		"a/h.png":   func(f *os.File, m image.Image) error { return gif.Encode(f, paletted(m), nil) }, // a GIF named .png
		"a/i.tif":   func(f *os.File, m image.Image) error { return tiff.Encode(f, m, nil) },
		"b/bmp.png": func(f *os.File, m image.Image) error { return bmp.Encode(f, m) },
	}
	for name, e := range enc {
		f, err := os.Create(filepath.Join(dir, "train", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := e(f, grey(4, 4, 60)); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	d, _, _, skips, err := loadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4})
	if err != nil {
		t.Fatal(err)
	}
	// a/g.gif, a/h.png, a/i.tif, a/y.png, a/z.png, b/x.png.
	if d.N != 6 || skips.total() != 1 || skips.n[skipNotImage] != 1 || skips.first[skipNotImage] != filepath.Join(dir, "train", "b", "bmp.png") {
		t.Fatalf("%d images, skips %v", d.N, &skips)
	}
	for i := range 3 {
		if x := d.Example(i); x[0] != 1 || x[5] != 60.0/255 {
			t.Errorf("image %d: pixels %v, %v; want 1 and %v", i, x[0], x[5], 60.0/255)
		}
	}
	if err := os.Rename(filepath.Join(dir, "train", "b", "bmp.png"), filepath.Join(dir, "test", "b", "bmp.png")); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = LoadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4})
	if err == nil || !strings.Contains(err.Error(), "a bmp image, not PNG, JPEG, GIF or TIFF") {
		t.Errorf("BMP test image: %v", err)
	}
}

// paletted is m on a palette of its own grey levels (GIF keeps them exact).
func paletted(m image.Image) *image.Paletted {
	p := image.NewPaletted(m.Bounds(), color.Palette{color.Gray{60}, color.Gray{255}})
	draw.Draw(p, p.Bounds(), m, m.Bounds().Min, draw.Src)
	return p
}

// A test class name with a control or bidirectional character is refused
// with the name quoted; a training directory of that name that test/ does
// not have is only left out.
func TestFolderClassNamesPrintable(t *testing.T) {
	for _, name := range []string{"cat\u202egnp.exe", "red\x1b[31m"} {
		dir := folder(t)
		writeImage(t, filepath.Join(dir, "train", name, "v.png"), grey(4, 4, 1))
		d, _, _, skips, err := loadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4})
		if err != nil || d.N != 3 || skips.n[skipNoClass] != 1 || !strings.Contains(skips.String(), strconv.Quote(filepath.Join(dir, "train", name))) {
			t.Errorf("training class %q: %v, skips %v", name, err, &skips)
		}
		writeImage(t, filepath.Join(dir, "test", name, "v.png"), grey(4, 4, 1))
		_, err = InspectFolder(dir)
		if err == nil || !strings.Contains(err.Error(), strconv.Quote(filepath.Join(dir, "test", name))) || !textsafe.Printable(err.Error()) {
			t.Errorf("test class %q: %v", name, err)
		}
	}
}

// The decoding gate holds at most maxDecodePixels source pixels: two
// 4096×4096 images decode at once, a third waits for one to finish.
func TestPixelGate(t *testing.T) {
	g := newPixelGate(maxDecodePixels)
	g.acquire(maxImagePixels)
	g.acquire(maxImagePixels)
	got := make(chan struct{})
	go func() {
		g.acquire(1)
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("a third image acquired pixels beyond the gate's")
	case <-time.After(20 * time.Millisecond):
	}
	g.release(maxImagePixels)
	<-got
	if g.free != maxImagePixels-1 {
		t.Errorf("%d pixels free, want %d", g.free, maxImagePixels-1)
	}
}
