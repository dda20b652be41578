//go:build linux || darwin || freebsd

package job

import "golang.org/x/sys/unix"

// freeBytes returns the bytes an unprivileged process may still write to
// the filesystem holding dir, and false when it cannot tell.
func freeBytes(dir string) (int64, bool) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, false
	}
	free := uint64(st.Bavail) * uint64(st.Bsize)
	if free > 1<<62 {
		free = 1 << 62
	}
	return int64(free), true
}
