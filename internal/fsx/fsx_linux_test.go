//go:build linux

package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dptune/dptune/internal/fsx/fsxtest"
)

func TestRefusesFIFOAndDevices(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	fsxtest.Mkfifo(t, fifo)
	zero := filepath.Join(dir, "zero")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, what string }{{fifo, "named pipe"}, {zero, "character device"}, {dir, "directory"}} {
		err := fsxtest.Within(t, func() error { _, err := ReadFile(c.path, 1<<20); return err })
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), c.what) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("ReadFile(%s) = %v, want ErrNotRegular naming the path and %q", c.path, err, c.what)
		}
	}
}

func TestReadsRegularFilesAndLinksToThem(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{p, link} {
		b, err := ReadFile(path, 5)
		if err != nil || string(b) != "12345" {
			t.Errorf("ReadFile(%s, 5) = %q, %v", path, b, err)
		}
		if _, err := ReadFile(path, 4); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "larger than 4 bytes") {
			t.Errorf("ReadFile(%s, 4) = %v, want ErrTooLarge", path, err)
		}
	}
	// The descriptor is blocking again: a read of a regular file at EOF
	// reports io.EOF, and the file is usable as usual.
	f, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if fl, err := fcntlFlags(f); err != nil || fl&syscall.O_NONBLOCK != 0 {
		t.Errorf("flags %#x, %v: O_NONBLOCK still set", fl, err)
	}
}

// TryLock refuses a lock held by another open file at once, and a lock
// file removed while held (its directory removed by the holder) does not
// leave two holders: the next TryLock locks the file now at the path.
func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := TryLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := TryLock(path); !errors.Is(err, ErrLocked) {
		t.Errorf("a held lock: %v, want ErrLocked", err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	second, err := TryLock(path)
	if err != nil {
		t.Fatalf("the lock file anew: %v", err)
	}
	if _, err := TryLock(path); !errors.Is(err, ErrLocked) {
		t.Errorf("the new lock file's lock: %v, want ErrLocked", err)
	}
	second()
	unlock()
}
