package job

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// A Save that fails mid-write leaves no partial file and no half of a
// release behind. The file size limit is set in a child process running
// this test alone: in the test binary itself the limit would also cut the
// go command's test log, which may be larger than it.
func TestSaveFailureLeavesNothingPartial(t *testing.T) {
	if dir := os.Getenv("DPTUNE_TEST_SAVE_DIR"); dir != "" {
		saveUnderFileSizeLimit(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSaveFailureLeavesNothingPartial$", "-test.count=1")
	cmd.Env = append(os.Environ(), "DPTUNE_TEST_SAVE_DIR="+dir)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v: %s", err, b)
	}
	if !strings.Contains(string(b), "save error: file too large") {
		t.Fatalf("Save beyond the file size limit did not fail with EFBIG:\n%s", b)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		t.Errorf("left behind: %s", filepath.Join(dir, e.Name()))
	}
}

// saveUnderFileSizeLimit saves a release into dir with writes beyond half
// of params.bin failing (EFBIG), as on a disk that fills up mid-write, and
// prints the error Save returned.
func saveUnderFileSizeLimit(dir string) {
	net, err := model.New(model.MNIST, randsrc.Seeded(1, "init"))
	if err != nil {
		fmt.Println("model:", err)
		return
	}
	r := &Release{Model: net, hyper: map[string]any{"steps": 1}, Report: map[string]int{"run": 1}}
	limit := uint64(4 * net.NumParams() / 2) // params.bin is cut in the middle
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		fmt.Println("getrlimit:", err)
		return
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		fmt.Println("setrlimit:", err)
		return
	}
	err = r.Save(dir)
	if errors.Is(err, syscall.EFBIG) {
		fmt.Println("save error: file too large")
	} else {
		fmt.Println("save error:", err)
	}
}
