package fsx

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotRegular is wrapped by the error Open returns for a path that is not
// a regular file (after following symbolic links).
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error ReadFile returns for a file larger
// than its bound.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading. It returns an error wrapping ErrNotRegular,
// naming path and what it is, unless path is (or links to) a regular file,
// and never blocks in open(2) (see the package documentation).
func Open(path string) (*os.File, error) {
	f, err := openNonblock(path)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, Kind(fi.Mode()))}
	}
	return f, nil
}

// ReadFile reads the regular file at path (Open) and returns its contents.
// It returns an error wrapping ErrTooLarge, naming path and max, for a file
// of more than max bytes.
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tooLarge := &os.PathError{Op: "read", Path: path, Err: fmt.Errorf("%w: larger than %d bytes", ErrTooLarge, max)}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, tooLarge
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, tooLarge
	}
	return b, nil
}

// Kind names what a file of mode m that is not a regular file is ("a
// symbolic link", "a directory", "a named pipe", …), for an error message.
func Kind(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "not a regular file"
}
