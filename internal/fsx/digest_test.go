package fsx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file's digest follows its first limit bytes; a directory's, the names,
// sizes and times of its regular files; neither matches what cannot be
// read.
func TestDigests(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a")
	if err := os.WriteFile(p, []byte("abcdef"), 0o600); err != nil {
		t.Fatal(err)
	}
	if FileDigest(p, 3) == FileDigest(p, 6) || FileDigest(p, 3) != FileDigest(p, 3) {
		t.Error("a file's digest does not follow its first limit bytes")
	}
	if d := FileDigest(filepath.Join(dir, "none"), 3); !strings.HasPrefix(d, "error ") {
		t.Errorf("a missing file's digest %q", d)
	}
	before := DirDigest(dir)
	if err := os.WriteFile(filepath.Join(dir, "b"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if DirDigest(dir) == before {
		t.Error("a new file leaves the directory's digest as it was")
	}
	if d := DirDigest(p); !strings.HasPrefix(d, "not a directory") {
		t.Errorf("a file's directory digest %q", d)
	}
}
