//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package fsx

import "errors"

// ErrLocked is wrapped by TryLock's error when another process holds the
// lock.
var ErrLocked = errors.New("locked by another process")

// TryLock is unavailable without flock(2): it refuses, rather than let two
// processes share what the lock guards.
func TryLock(path string) (unlock func(), err error) {
	return nil, errors.New("locking needs flock(2), which this platform lacks")
}
