//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package budget

import (
	"errors"
	"os"
	"syscall"
)

// lock takes an exclusive flock(2) on path+".lock" (created with mode 0600
// if missing), waiting for it, and returns the function that releases it.
// flock locks belong to the open file description, so two goroutines of one
// process exclude each other as two processes do, and the kernel releases
// the lock of a killed process.
func lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
