//go:build unix

package model

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/internal/fsx/fsxtest"
	"github.com/dptune/dptune/internal/randsrc"
)

// A spec one byte over MaxSpecBytes is refused as too large, not as a
// truncated JSON text.
func TestSpecOverCapSaysSo(t *testing.T) {
	js, err := json.Marshal(TBMNIST)
	if err != nil {
		t.Fatal(err)
	}
	pad := bytes.Repeat([]byte{' '}, MaxSpecBytes+1-len(js))
	big := append(append([]byte{}, js...), pad...) // MaxSpecBytes + 1 bytes
	want := fmt.Sprintf("spec larger than %d bytes", MaxSpecBytes)
	if _, err := ParseSpec(bytes.NewReader(big)); err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("ParseSpec of %d bytes: %v, want %q", len(big), err, want)
	}
	if _, err := ParseSpec(bytes.NewReader(big[:MaxSpecBytes])); err != nil {
		t.Fatalf("ParseSpec of exactly %d bytes: %v", MaxSpecBytes, err)
	}
	p := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(p, big, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSpec(p); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
		t.Fatalf("LoadSpec of %d bytes: %v, want %q", len(big), err, want)
	}
}

// A spec file or a checkpoint's params.bin that is a FIFO is refused at
// once; one that links to /dev/zero is refused without reading it.
func TestNonRegularFilesRefused(t *testing.T) {
	dir := t.TempDir()
	spec := filepath.Join(dir, "spec.json")
	fsxtest.Mkfifo(t, spec)
	if err := fsxtest.Within(t, func() error { _, err := LoadSpec(spec); return err }); !errors.Is(err, fsx.ErrNotRegular) {
		t.Fatalf("FIFO spec: %v", err)
	}
	net, err := New(MNIST, randsrc.Seeded(1, "init"))
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{"fifo", "/dev/zero"} {
		m := t.TempDir()
		if err := net.Save(m, Metadata{}); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(m, "params.bin")
		os.Remove(p)
		if target == "fifo" {
			err = syscall.Mkfifo(p, 0o600)
		} else {
			err = os.Symlink(target, p)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := fsxtest.Within(t, func() error { _, _, err := Load(m); return err }); !errors.Is(err, fsx.ErrNotRegular) || !strings.Contains(err.Error(), p) {
			t.Fatalf("params.bin as %s: %v", target, err)
		}
	}
}
