// Package fsxtest helps the tests of code that must never block on a file
// a user names (package fsx): it runs a call with a deadline and makes the
// FIFOs such code must refuse.
package fsxtest

import (
	"testing"
	"time"
)

// Within returns f's error, failing t if f has not returned within 5 s —
// what a call that waits in open(2) on a FIFO does.
func Within(t testing.TB, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("blocked on a file that is not a regular file")
		return nil
	}
}
