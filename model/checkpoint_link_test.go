//go:build unix

package model

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
)

// Symbolic links planted at params.bin.tmp and model.json.tmp (where Save
// used to write before renaming) and at the checkpoint's own names never
// make Save write through them: the victim keeps its content, and the
// checkpoint is two regular files that load as saved.
func TestCheckpointSaveIgnoresPlantedLinks(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{paramsFile + ".tmp", modelFile + ".tmp", paramsFile, modelFile} {
		if err := os.Symlink(victim, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	net, err := New(MNIST, randsrc.Seeded(3, "init"))
	if err != nil {
		t.Fatal(err)
	}
	if err := net.Save(dir, Metadata{}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "victim" {
		t.Errorf("Save wrote through a planted link: the victim holds %.40q (%v)", b, err)
	}
	for _, n := range []string{paramsFile, modelFile} {
		if fi, err := os.Lstat(filepath.Join(dir, n)); err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s is not a regular file (%v)", n, err)
		}
	}
	got, _, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range net.Params {
		if got.Params[i] != net.Params[i] {
			t.Fatalf("parameter %d: loaded %v, saved %v", i, got.Params[i], net.Params[i])
		}
	}
}
