//go:build unix

package data

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// As torchvision's ImageFolder (os.walk with followlinks=True, sorted):
// class directories that are symbolic links are classes, in both splits;
// images in sub-directories belong to their class, ordered by directory
// path, then name ("a/b" < "a/b-c" < "a/b/d", since '-' < '/'); a link to
// an image is read; a link back to an ancestor is not followed (counted).
func TestLoadFolderLinksAndSubdirs(t *testing.T) {
	dir := folder(t)
	elsewhere := t.TempDir()
	for split, v := range map[string]uint8{"train": 70, "test": 80} {
		writeImage(t, filepath.Join(elsewhere, split, "k.png"), grey(4, 4, v))
		if err := os.Symlink(filepath.Join(elsewhere, split), filepath.Join(dir, split, "c")); err != nil {
			t.Fatal(err)
		}
	}
	a := filepath.Join(dir, "train", "a")
	writeImage(t, filepath.Join(a, "b", "2.png"), grey(4, 4, 2))
	writeImage(t, filepath.Join(a, "b-c", "3.png"), grey(4, 4, 3))
	writeImage(t, filepath.Join(a, "b", "d", "4.png"), grey(4, 4, 4))
	if err := os.Symlink(filepath.Join(elsewhere, "train", "k.png"), filepath.Join(a, "b", "d", "5.png")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(a, filepath.Join(a, "b", "loop")); err != nil {
		t.Fatal(err)
	}
	train, test, classes, skips, err := loadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(classes, ",") != "a,b,c" || test.N != 3 || test.Y[2] != 2 || test.Example(2)[5] != 80.0/255 {
		t.Fatalf("classes %v, %d test images", classes, test.N)
	}
	// a/y (10), a/z (20), a/b/2, a/b-c/3, a/b/d/4, a/b/d/5 (70), b/x (30), c/k (70).
	want := []struct {
		label uint8
		v     float32
	}{{0, 10}, {0, 20}, {0, 2}, {0, 3}, {0, 4}, {0, 70}, {1, 30}, {2, 70}}
	if train.N != len(want) {
		t.Fatalf("%d training images, want %d", train.N, len(want))
	}
	for i, w := range want {
		if train.Y[i] != w.label || train.Example(i)[5] != w.v/255 {
			t.Errorf("example %d: label %d, pixel %v; want %d, %v", i, train.Y[i], train.Example(i)[5], w.label, w.v/255)
		}
	}
	if skips.total() != 1 || skips.n[skipLoop] != 1 || skips.first[skipLoop] != filepath.Join(a, "b", "loop") {
		t.Errorf("skips %v; want the loop a/b/loop", &skips)
	}
	// A loop in the public split is refused.
	if err := os.Symlink(filepath.Join(dir, "test", "a"), filepath.Join(dir, "test", "a", "again")); err != nil {
		t.Fatal(err)
	}
	if _, err := InspectFolder(dir); err == nil || !strings.Contains(err.Error(), "reached again through a symbolic link") {
		t.Errorf("loop in test/a: %v", err)
	}
}

// A named pipe, a broken link or an unreadable file among the training
// images is left out and counted without blocking; in the test split it is
// refused with its path.
func TestLoadFolderSpecialFiles(t *testing.T) {
	dir := folder(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "train", "a", "fifo.png"), 0o644); err != nil {
		t.Skip("no FIFO:", err)
	}
	if err := os.Symlink(filepath.Join(dir, "absent.png"), filepath.Join(dir, "train", "b", "broken.png")); err != nil {
		t.Fatal(err)
	}
	d, _, _, skips, err := loadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4})
	if err != nil {
		t.Fatal(err)
	}
	if d.N != 3 || skips.n[skipUnreadable] != 2 || skips.first[skipUnreadable] != filepath.Join(dir, "train", "a", "fifo.png") || skips.total() != 2 {
		t.Errorf("%d images, skips %v", d.N, &skips)
	}
	if err := os.Rename(filepath.Join(dir, "train", "a", "fifo.png"), filepath.Join(dir, "test", "a", "fifo.png")); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := LoadFolder(context.Background(), dir, FolderOptions{C: 1, H: 4, W: 4}); err == nil || !strings.Contains(err.Error(), "fifo.png: not a regular file") {
		t.Errorf("FIFO in test/a: %v", err)
	}
}
