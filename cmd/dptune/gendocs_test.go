package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCLIReferenceCurrent regenerates the CLI reference and fails when the
// checked-in pages in docs/reference/cli differ from what the commands'
// --help now says.
func TestCLIReferenceCurrent(t *testing.T) {
	const checkedIn = "../../docs/reference/cli"
	dir := t.TempDir()
	if err := genDocs(dir); err != nil {
		t.Fatal(err)
	}
	fresh, err := filepath.Glob(filepath.Join(dir, "dptune*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(fresh) == 0 {
		t.Fatal("gen-docs wrote no pages")
	}
	old, err := filepath.Glob(filepath.Join(checkedIn, "dptune*.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range fresh {
		name := filepath.Base(f)
		seen[name] = true
		want, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(checkedIn, name))
		if err != nil {
			t.Errorf("%s/%s is missing: run make docs", checkedIn, name)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s/%s differs from the command's --help: run make docs", checkedIn, name)
		}
	}
	for _, f := range old {
		if !seen[filepath.Base(f)] {
			t.Errorf("%s names no command: run make docs", f)
		}
	}
}
