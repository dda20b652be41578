//go:build unix

package fsx

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// plant makes a victim file outside dir holding "victim" and a symbolic
// link to it at each of dir's names; it returns the victim's path.
func plant(t *testing.T, dir string, names ...string) string {
	t.Helper()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if err := os.Symlink(victim, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	return victim
}

// checkVictim fails the test unless the victim still holds "victim".
func checkVictim(t *testing.T, victim string) {
	t.Helper()
	if b, err := os.ReadFile(victim); err != nil || string(b) != "victim" {
		t.Errorf("the file a planted link points to now holds %q (%v)", b, err)
	}
}

// checkRegular fails the test unless path is a regular file (not a link)
// holding want with mode perm, and nothing but names is left in its
// directory.
func checkRegular(t *testing.T, path, want string, perm os.FileMode, names ...string) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != perm {
		t.Fatalf("%s: %v, %v; want a regular file of mode %v", path, fi.Mode(), err, perm)
	}
	if b, _ := os.ReadFile(path); string(b) != want {
		t.Errorf("%s holds %q, want %q", path, b, want)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	left := map[string]bool{}
	for _, n := range names {
		left[n] = true
	}
	for _, e := range entries {
		if !left[e.Name()] {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// A symbolic link planted where the old scheme put its temporary file
// (path.tmp), and one at the destination itself, never redirect the write:
// the victim keeps its content and path becomes a regular file.
func TestWriteFileAtomicIgnoresPlantedLinks(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "report.json")
	victim := plant(t, dir, "report.json.tmp", "report.json")
	if err := WriteFileAtomic(path, []byte("data"), 0o640); err != nil {
		t.Fatal(err)
	}
	checkVictim(t, victim)
	checkRegular(t, path, "data", 0o640, "report.json", "report.json.tmp")
	// Again over the regular file: replaced whole.
	if err := WriteFileAtomic(path, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkRegular(t, path, "new", 0o644, "report.json", "report.json.tmp")
}

// A directory at the destination is refused and left as it was.
func TestWriteFileAtomicRefusesDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(path, []byte("x"), 0o644); err == nil {
		t.Error("a directory at the destination was accepted")
	}
	if err := WritePathAtomic(path, 0o644, func(name string) error { return os.WriteFile(name, []byte("x"), 0o600) }); err == nil {
		t.Error("WritePathAtomic: a directory at the destination was accepted")
	}
	if fi, err := os.Lstat(path); err != nil || !fi.IsDir() {
		t.Errorf("the directory was replaced: %v, %v", fi, err)
	}
}

// WritePathAtomic hands its writer a name in a fresh private directory, so
// a link at the destination is replaced, not written through; a failing
// writer leaves the destination and the directory as they were.
func TestWritePathAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.png")
	victim := plant(t, dir, "audit.png")
	var given string
	err := WritePathAtomic(path, 0o644, func(name string) error {
		given = name
		return os.WriteFile(name, []byte("png"), 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(filepath.Dir(given)) != dir || filepath.Base(given) != "audit.png" {
		t.Errorf("the writer got %s, want DIR/TMP/audit.png", given)
	}
	checkVictim(t, victim)
	checkRegular(t, path, "png", 0o644, "audit.png")

	boom := errors.New("boom")
	if err := WritePathAtomic(path, 0o644, func(name string) error {
		os.WriteFile(name, []byte("partial"), 0o600)
		return boom
	}); !errors.Is(err, boom) {
		t.Errorf("a failing writer: %v, want its error", err)
	}
	if err := WritePathAtomic(path, 0o644, func(string) error { return nil }); err == nil {
		t.Error("a writer that wrote nothing was accepted")
	}
	checkRegular(t, path, "png", 0o644, "audit.png")
}
