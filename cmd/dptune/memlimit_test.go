package main

import (
	"os"
	"path/filepath"
	"testing"
)

// MemTotal is read in bytes from a meminfo file; a file without it, or
// with a malformed value, gives none.
func TestMemTotal(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		text string
		want int64
		ok   bool
	}{
		{"MemTotal:       24576000 kB\nMemFree:        1 kB\n", 24576000 << 10, true},
		{"MemFree:        1 kB\n", 0, false},
		{"MemTotal:       lots kB\n", 0, false},
		{"MemTotal:       -5 kB\n", 0, false},
	} {
		p := filepath.Join(dir, "meminfo")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got, ok := memTotal(p); got != c.want || ok != c.ok {
			t.Errorf("%q: %d, %v; want %d, %v", c.text, got, ok, c.want, c.ok)
		}
	}
	if _, ok := memTotal(filepath.Join(dir, "absent")); ok {
		t.Error("an absent file gave a total")
	}
}
