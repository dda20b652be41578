package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --cpuprofile writes a Go CPU profile (gzip-compressed protobuf) of the
// command, and an unwritable path is refused with status 2 before any work.
func TestCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	code, text := run(t, "account", "--noise-multiplier", "1.1", "--sampling-rate", "0.004", "--steps", "100", "--cpuprofile", path)
	stopProfile()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, text)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Errorf("the profile is not gzip data: % x", b[:min(len(b), 8)])
	}
	code, text = run(t, "account", "--noise-multiplier", "1.1", "--sampling-rate", "0.004", "--steps", "100", "--cpuprofile", filepath.Join(t.TempDir(), "no", "cpu.prof"))
	stopProfile()
	if code != 2 || !strings.Contains(text, "--cpuprofile") || strings.Contains(text, "ε") {
		t.Errorf("an unwritable profile: exit %d: %s", code, text)
	}
}
