package fsx

import (
	"os"
	"syscall"
)

func fcntlFlags(f *os.File) (int, error) {
	r, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_GETFL, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
