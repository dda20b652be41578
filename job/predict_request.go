package job

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/dptune/dptune/internal/textsafe"
)

// PredictRequest is a labelling as a person asks for it (dptune predict's
// arguments and flags, whose names the errors speak): the model directory
// Model, and the images either as Paths or listed in the file FilesFrom
// ("-": Stdin), one a line or with Null each ended by a NUL byte.
type PredictRequest struct {
	Model     string
	Paths     []string
	FilesFrom string
	Null      bool
	Stdin     io.Reader
}

// Config checks r and returns its PredictConfig: the paths are counted
// first (PredictConfig.Count) when given as arguments or listed in a
// regular file, never when read from a pipe. It refuses, before any image
// is read, with an error wrapping ErrInvalid: no model, both paths and a
// list or neither, Null without a list, a list that cannot be opened.
func (r PredictRequest) Config() (PredictConfig, error) {
	c := PredictConfig{Model: r.Model}
	switch {
	case r.Model == "":
		return c, invalidf("--model DIR is required")
	case r.FilesFrom != "" && len(r.Paths) > 0:
		return c, invalidf("give PATHs or --files-from, not both")
	case r.Null && r.FilesFrom == "":
		return c, invalidf("--null describes --files-from's list: give --files-from")
	case r.FilesFrom != "":
		c.Paths = ListedPaths(r.FilesFrom, r.Stdin, r.Null)
		if r.FilesFrom != "-" {
			st, err := os.Stat(r.FilesFrom)
			if err != nil {
				return c, invalidf("--files-from: %v", err)
			}
			c.Count = st.Mode().IsRegular() // read twice: counted first
		}
	case len(r.Paths) == 0:
		return c, invalidf("give one or more image files or directories")
	default:
		c.Paths = pathsOf(r.Paths)
		c.Count = true
	}
	return c, nil
}

// pathsOf yields paths.
func pathsOf(paths []string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, p := range paths {
			if !yield(p, nil) {
				return
			}
		}
	}
}

// maxListEntry bounds one entry of a list of paths (Linux's PATH_MAX is
// 4096 bytes).
const maxListEntry = 1 << 16

// ListedPaths yields the paths listed in the file name ("-": in), each
// ended by a newline or with null a NUL byte (the last may lack it),
// skipping empty ones; each range reads the list anew, an entry at a time.
// It ends with an error for a list that cannot be read or an entry longer
// than 64 KiB.
func ListedPaths(name string, in io.Reader, null bool) iter.Seq2[string, error] {
	sep := byte('\n')
	if null {
		sep = 0
	}
	return func(yield func(string, error) bool) {
		r := in
		if name != "-" {
			f, err := os.Open(name)
			if err != nil {
				yield("", fmt.Errorf("--files-from: %w", err))
				return
			}
			defer f.Close()
			r = f
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 4096), maxListEntry)
		sc.Split(func(data []byte, atEOF bool) (int, []byte, error) {
			if i := bytes.IndexByte(data, sep); i >= 0 {
				return i + 1, data[:i], nil
			}
			if atEOF && len(data) > 0 {
				return len(data), data, nil
			}
			return 0, nil, nil
		})
		for sc.Scan() {
			if len(sc.Bytes()) > 0 && !yield(sc.Text(), nil) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			yield("", fmt.Errorf("--files-from %s: %w", textsafe.Quoted(name), err))
		}
	}
}
