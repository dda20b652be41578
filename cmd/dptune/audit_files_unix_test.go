//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/internal/fsx/fsxtest"
)

// A FIFO as the audit's trial file is refused at once, exit 2, with one
// line naming it: it used to block in open(2) forever.
func TestAuditFIFOTrialsRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "trials.csv")
	fsxtest.Mkfifo(t, fifo)
	done := make(chan struct{})
	var code int
	var out string
	go func() {
		defer close(done)
		code, out = run(t, "audit", "reduced", "--repeat", "fixed", "--runs", "1", "--trials", "100", "--out", dir)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("audit blocked on a FIFO as its trial file")
	}
	if code != 2 || !strings.Contains(out, fifo) || !strings.Contains(out, "named pipe") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("exit %d, output %q; want exit 2 and one line naming the FIFO", code, out)
	}
}

// Symbolic links planted in --out at audit.json and audit.png (and at
// the names of temporary files beside them) are replaced, never written
// through: the file they point to keeps its content.
func TestAuditOutputsIgnorePlantedLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"audit.json", "audit.png", "audit.json.tmp", "audit.png.tmp"} {
		if err := os.Symlink(victim, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	if code, out := run(t, "audit", "reduced", "--repeat", "fixed", "--runs", "1", "--trials", "100", "--out", dir); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "victim" {
		t.Errorf("the audit wrote through a planted link: the victim holds %.40q (%v)", b, err)
	}
	for _, n := range []string{"audit.json", "audit.png"} {
		fi, err := os.Lstat(filepath.Join(dir, n))
		if err != nil || !fi.Mode().IsRegular() || fi.Size() == 0 {
			t.Errorf("%s is not a non-empty regular file (%v)", n, err)
		}
	}
}
