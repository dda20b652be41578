//go:build unix

package job

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// CheckFile accepts a new file in a writable directory and an existing
// writable file (unchanged), and refuses a directory, a FIFO, a read-only
// file and an uncreatable path, wrapping ErrInvalid.
func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.csv")
	if err := os.WriteFile(existing, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ok := range []string{filepath.Join(dir, "new.csv"), filepath.Join(dir, "sub", "new.csv"), existing} {
		if err := CheckFile(ok); err != nil {
			t.Errorf("CheckFile(%s): %v", ok, err)
		}
	}
	if b, _ := os.ReadFile(existing); string(b) != "kept" {
		t.Errorf("CheckFile changed an existing file: %q", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 { // old.csv and sub/
		t.Errorf("CheckFile left files behind: %v", entries)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(dir, "ro.csv")
	if err := os.WriteFile(readOnly, nil, 0o400); err != nil {
		t.Fatal(err)
	}
	bad := []string{dir, fifo, "/proc/x.csv", filepath.Join(existing, "x.csv")}
	if os.Geteuid() != 0 {
		bad = append(bad, readOnly)
	}
	for _, p := range bad {
		if err := CheckFile(p); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckFile(%s): %v, want ErrInvalid", p, err)
		}
	}
}
