//go:build unix

package fsxtest

import (
	"syscall"
	"testing"
)

// Mkfifo makes a FIFO at path, skipping t where FIFOs cannot be made.
func Mkfifo(t testing.TB, path string) {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
}
