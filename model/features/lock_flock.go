//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package features

import (
	"errors"
	"os"
	"syscall"
)

// lockWriting takes an exclusive flock(2) on f, the cache file being
// written, and holds it until f is closed (or the process dies): a later
// run sees that the write is alive (probeLock). Where the filesystem takes
// no locks it does nothing; the write goes on, and its leftovers are then
// judged by age alone.
func lockWriting(f *os.File) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return
		}
	}
}

// probeLock reports whether another open file holds a lock on the file at
// path, trying for an exclusive lock without waiting (and releasing it at
// once). The file is opened read-only, without following a symbolic link
// and without blocking.
func probeLock(path string) lockState {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return unknown
	}
	defer f.Close()
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return unlocked // released by Close
	case errors.Is(err, syscall.EWOULDBLOCK):
		return locked
	}
	return unknown
}
