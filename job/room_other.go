//go:build !(linux || darwin || freebsd)

package job

// freeBytes cannot tell the free space here.
func freeBytes(string) (int64, bool) { return 0, false }
