//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package fsx

import (
	"errors"
	"os"
	"syscall"
)

// ErrLocked is wrapped by TryLock's error when another process (or another
// open file in this one) holds the lock.
var ErrLocked = errors.New("locked by another process")

// TryLock takes an exclusive flock(2) on path (created with mode 0600 if
// missing) without waiting: it returns an error wrapping ErrLocked at once
// when the lock is held. unlock releases it; the kernel releases the lock
// of a killed process.
//
// A lock file removed and created anew while its lock was held (its
// directory removed by the holder) is a different file: the lock taken is
// kept only if the file locked is still the one at path, else it is taken
// again on the new one.
func TryLock(path string) (unlock func(), err error) {
	for range 8 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, err
		}
		for {
			err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
			if !errors.Is(err, syscall.EINTR) {
				break
			}
		}
		if errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, ErrLocked
		}
		if err != nil {
			f.Close()
			return nil, err
		}
		held, herr := f.Stat()
		now, nerr := os.Lstat(path)
		if herr == nil && nerr == nil && os.SameFile(held, now) {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
	return nil, ErrLocked
}
