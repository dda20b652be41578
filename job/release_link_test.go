//go:build unix

package job

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// Symbolic links planted in the output directory at the names the old
// Save wrote through (NAME.tmp) and at the release's names themselves
// never make Save write outside it: each victim keeps its content, and
// each release file is a regular file holding the release.
func TestSaveIgnoresPlantedTmpLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"model.json", "params.bin", "report.json"} {
		for _, n := range []string{name + ".tmp", name} {
			if err := os.Symlink(victim, filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	net, err := model.New(model.MNIST, randsrc.Seeded(1, "init"))
	if err != nil {
		t.Fatal(err)
	}
	r := &Release{Model: net, hyper: map[string]any{"steps": 1}, Report: map[string]int{"run": 7}}
	if err := r.Save(dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "victim" {
		t.Errorf("Save wrote through a planted link: the victim holds %.40q (%v)", b, err)
	}
	for _, name := range []string{"model.json", "params.bin", "report.json"} {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s is not a regular file (%v)", name, err)
		}
	}
	var rep map[string]int
	if b, err := os.ReadFile(filepath.Join(dir, "report.json")); err != nil || json.Unmarshal(b, &rep) != nil || rep["run"] != 7 {
		t.Errorf("report.json: %v, %v; want the release's report", rep, err)
	}
	got, _, err := model.Load(dir)
	if err != nil || got.Params[0] != net.Params[0] {
		t.Errorf("the saved model does not load as saved: %v", err)
	}
}

// A failed job refuses to move the earlier release into a previous/ that
// is a symbolic link (to a directory outside the output directory): Save
// returns an error naming it, the earlier release stays in place and
// nothing lands where the link points.
func TestSaveRefusesPreviousLink(t *testing.T) {
	dir := t.TempDir()
	net, err := model.New(model.MNIST, randsrc.Seeded(1, "init"))
	if err != nil {
		t.Fatal(err)
	}
	good := &Release{Model: net, hyper: map[string]any{"steps": 1}, Report: map[string]int{"run": 1}}
	if err := good.Save(dir); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	if err := os.Symlink(elsewhere, filepath.Join(dir, "previous")); err != nil {
		t.Fatal(err)
	}
	failed := &Release{Failed: true, Report: map[string]int{"run": 2}}
	err = failed.Save(dir)
	if err == nil || !strings.Contains(err.Error(), "previous is a symbolic link") {
		t.Errorf("Save with previous/ a link: %v, want it refused", err)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("%d files moved through the link", len(entries))
	}
	if _, _, err := model.Load(dir); err != nil {
		t.Errorf("the earlier release is no longer in place: %v", err)
	}
}

// The NOT PRIVATE diagnostics replace a symbolic link at their path
// instead of writing the runs' scores through it, and are private to the
// owner (0600).
func TestWriteDiagnosticsIgnoresPlantedLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "diagnostics.json")
	if err := os.Symlink(victim, path); err != nil {
		t.Fatal(err)
	}
	if err := (&NotPrivateDiagnostics{}).WriteDiagnostics(path); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "victim" {
		t.Errorf("the diagnostics were written through a planted link: the victim holds %.40q (%v)", b, err)
	}
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Errorf("%s is not a regular file of mode 0600 (%v)", path, err)
	}
	if b, _ := os.ReadFile(path); !strings.Contains(string(b), "NOT PRIVATE") {
		t.Errorf("%s holds %.60q", path, b)
	}
}
