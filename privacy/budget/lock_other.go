//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package budget

import "errors"

// lock is unavailable without flock(2): Reserve and Commit refuse to run
// rather than risk losing a concurrent run's release.
func lock(path string) (unlock func(), err error) {
	return nil, errors.New("locking the budget file needs flock(2), which this platform lacks")
}
