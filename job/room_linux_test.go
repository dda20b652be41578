package job

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// CheckRoom refuses a release larger than the free space statfs reports
// and accepts one that fits.
func TestCheckRoom(t *testing.T) {
	dir := t.TempDir()
	free, ok := freeBytes(dir)
	if !ok || free <= 0 {
		t.Fatalf("statfs: free %d, %v", free, ok)
	}
	if err := CheckRoom(dir, free+1<<30); !errors.Is(err, ErrInvalid) {
		t.Errorf("a release 1 GiB above the free space: %v", err)
	}
	if err := CheckRoom(dir, 1); err != nil {
		t.Errorf("a 1-byte release: %v", err)
	}
	need, err := ReleaseBytes(model.MNIST)
	n, _ := model.NewZero(model.MNIST)
	if err != nil || need != 4*int64(n.NumParams())+releaseSlack {
		t.Errorf("ReleaseBytes(MNIST) = %d, %v", need, err)
	}
}

// withFileSizeLimit runs f with writes beyond limit bytes of any file
// failing (EFBIG), as on a disk that fills up mid-write.
func withFileSizeLimit(t *testing.T, limit uint64, f func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skip(err)
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Skip(err)
	}
	defer syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old)
	f()
}

// A Save that fails mid-write leaves no partial file and no half of a
// release behind.
func TestSaveFailureLeavesNothingPartial(t *testing.T) {
	dir := t.TempDir()
	net, err := model.New(model.MNIST, randsrc.Seeded(1, "init"))
	if err != nil {
		t.Fatal(err)
	}
	r := &Release{Model: net, hyper: map[string]any{"steps": 1}, Report: map[string]int{"run": 1}}
	limit := uint64(4 * net.NumParams() / 2) // params.bin is cut in the middle
	withFileSizeLimit(t, limit, func() { err = r.Save(dir) })
	if !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("Save beyond the file size limit: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
	}
}
