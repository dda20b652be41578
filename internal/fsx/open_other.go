//go:build !unix

package fsx

import (
	"fmt"
	"os"
)

// openNonblock refuses a path that is not a regular file before opening it
// (without O_NONBLOCK there is a window between the check and the open).
func openNonblock(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, Kind(fi.Mode()))}
	}
	return os.Open(path)
}
