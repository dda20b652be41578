package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeFolderPNG writes img as a PNG at path.
func writeFolderPNG(t *testing.T, path string, img image.Image) {
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

// smallFolder writes an image folder of ten classes, "0" … "9", one
// 28×28 grey image each in test/ and train/, and first as the first
// training image.
func smallFolder(t *testing.T, name string, first image.Image) string {
	dir := filepath.Join(t.TempDir(), name)
	for _, c := range strings.Split("0123456789", "") {
		writeFolderPNG(t, filepath.Join(dir, "test", c, "t.png"), image.NewGray(image.Rect(0, 0, 28, 28)))
		writeFolderPNG(t, filepath.Join(dir, "train", c, "u.png"), image.NewGray(image.Rect(0, 0, 28, 28)))
	}
	writeFolderPNG(t, filepath.Join(dir, "train", "0", "0.png"), first)
	return dir
}

// H2: the Source of a folder — its network, input shape, classes and
// name, all released — is the same for two folders that differ in their
// first training image (28×28 grey, 20×20 grey, 64×48 RGB): tb-mnist on
// 1×28×28, by the test split. --image-shape overrides it, and the settings
// a checkpoint keeps carry it.
func TestFolderSourceIsPublic(t *testing.T) {
	var arches []any
	for _, first := range []image.Image{image.NewGray(image.Rect(0, 0, 28, 28)), image.NewGray(image.Rect(0, 0, 20, 20)), image.NewRGBA(image.Rect(0, 0, 64, 48))} {
		src, classes, err := FolderDataset(smallFolder(t, "digits", first), "", 4, FolderSettings{})
		if err != nil {
			t.Fatal(err)
		}
		a := src.Arch
		if a.Name != "tb-mnist" || a.C != 1 || a.H != 28 || a.W != 28 || a.Classes != 10 || strings.Join(classes, "") != "0123456789" || src.Name != "folder:digits" {
			t.Errorf("first training image %v: %s on %d×%d×%d, classes %v, name %s", first.Bounds(), a.Name, a.C, a.H, a.W, classes, src.Name)
		}
		arches = append(arches, a)
	}
	for _, a := range arches[1:] {
		if !reflect.DeepEqual(a, arches[0]) {
			t.Errorf("arch %+v differs from %+v", a, arches[0])
		}
	}
	src, _, err := FolderDataset(smallFolder(t, "digits", image.NewGray(image.Rect(0, 0, 28, 28))), "", 4, FolderSettings{Shape: []int{3, 32, 32}})
	if err != nil {
		t.Fatal(err)
	}
	if a := src.Arch; a.Name != "tb-cifar10" || a.C != 3 || a.H != 32 || a.W != 32 {
		t.Errorf("--image-shape 3,32,32: %s on %d×%d×%d", a.Name, a.C, a.H, a.W)
	}
	b, err := json.Marshal(src.folder)
	if err != nil || string(b) != `{"shape":[3,32,32]}` {
		t.Errorf("kept settings %s, %v", b, err)
	}
}

// The loader's note of what it left out of the training split reaches
// the job's curator-side warnings (and nothing else).
func TestFolderWarnsCurator(t *testing.T) {
	dir := smallFolder(t, "digits", image.NewGray(image.Rect(0, 0, 28, 28)))
	if err := os.WriteFile(filepath.Join(dir, "train", "1", "v.png"), []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, _, err := FolderDataset(dir, "", 11, FolderSettings{})
	if err != nil {
		t.Fatal(err)
	}
	var warns []string
	train, _, err := src.LoadInputs(context.Background(), func(s string) { warns = append(warns, s) })
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 11 || len(warns) != 1 || !strings.Contains(warns[0], "left out 1 entry of") || !strings.Contains(warns[0], "v.png") {
		t.Errorf("%d training images, warnings %q", train.N, warns)
	}
}

// A folder's dataset name is "folder:" and its directory's last element,
// which must be printable and a name; anything else wraps ErrInvalid.
func TestFolderDatasetNames(t *testing.T) {
	for name, ok := range map[string]bool{
		"folder:photos":         true,
		"folder:chiffres-été":   true,
		"folder:":               false,
		"folder:.":              false,
		"folder:..":             false,
		"folder:a/b":            false,
		"folder:esc\x1b[31mred": false,
		"folder:cat\u202egnp":   false,
		"mnist":                 false,
	} {
		err := CheckFolderDatasetName(name)
		if (err == nil) != ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("CheckFolderDatasetName(%q) = %v, want ok %v", name, err, ok)
		}
	}
	dir := filepath.Join(t.TempDir(), "esc\x1b[31mred")
	if _, _, err := FolderDataset(dir, "", 4, FolderSettings{}); err == nil || !errors.Is(err, ErrInvalid) || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("a folder named with ESC: %v", err)
	}
	if got, err := FolderDatasetName(filepath.Join(t.TempDir(), "photos") + "/"); err != nil || got != "folder:photos" {
		t.Errorf("FolderDatasetName = %q, %v", got, err)
	}
}

// A fixed subset and a development split of an image folder hold in every
// read of it: Load, the jobs' own read (loadCtx, through the folder's
// context-aware loader) and a worker's copy from the job's dataRef agree,
// and a development split's test set is held-out training images, never
// the folder's test/.
func TestFolderSubsetAndDevSplit(t *testing.T) {
	dir := smallFolder(t, "digits", image.NewGray(image.Rect(0, 0, 28, 28)))
	for i := range 60 {
		c := fmt.Sprint(i % 10)
		writeFolderPNG(t, filepath.Join(dir, "train", c, fmt.Sprintf("x%d.png", i)), image.NewGray(image.Rect(0, 0, 28, 28)))
	}
	src, _, err := FolderDataset(dir, "", 71, FolderSettings{})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := src.WithSubset(30, 7)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := src.WithDevSplit(30, 7)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]Source{"subset": sub, "development split": dev} {
		train, test, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		jtrain, jtest, err := s.loadCtx(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if jtrain.N != train.N || jtest.N != test.N || train.N >= 71 {
			t.Errorf("%s: the jobs read %d + %d images, Load %d + %d (of 71 training images)", name, jtrain.N, jtest.N, train.N, test.N)
		}
		wtrain, wtest, err := s.ref().raw()
		if err != nil {
			t.Fatal(err)
		}
		if wtrain.N != train.N || wtest.N != test.N {
			t.Errorf("%s: a worker's copy has %d + %d images, the curator's %d + %d", name, wtrain.N, wtest.N, train.N, test.N)
		}
	}
	jtrain, jtest, err := dev.loadCtx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if jtrain.N+jtest.N != 71 || jtest.N == 10 {
		t.Errorf("development split: %d + %d images, want the 71 training images cut (not the folder's 10 test images)", jtrain.N, jtest.N)
	}
}
