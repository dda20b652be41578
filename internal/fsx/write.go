package fsx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFileAtomic writes data to path with permissions perm (exactly, not
// masked by the umask), so that path either keeps its earlier content or
// holds all of data, and so that nothing planted in path's directory can
// redirect the write: the data goes to a new file that os.CreateTemp makes
// in that directory under a random name (O_CREATE|O_EXCL: an existing name,
// a symbolic link included, is never opened), is fsynced, and is renamed
// over path. The rename replaces whatever path is, a symbolic link
// included, instead of writing through it. A directory at path is refused.
// If any step fails the temporary file is removed, path is unchanged, and
// the error is returned.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := notDir(path); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	werr := func() error {
		if _, err := tmp.Write(data); err != nil {
			return err
		}
		if err := tmp.Chmod(perm); err != nil {
			return err
		}
		if err := tmp.Sync(); err != nil {
			return err
		}
		return tmp.Close()
	}()
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return werr
	}
	syncDir(dir)
	return nil
}

// WritePathAtomic is WriteFileAtomic for a writer that takes a file name
// (a plotting library's Save, say): write is called with the name of a file
// inside a new directory that os.MkdirTemp makes, private to this process,
// in path's directory; what write leaves there is given permissions perm
// and renamed over path, and the directory is removed. If write returns an
// error, or leaves no regular file, path is unchanged.
func WritePathAtomic(path string, perm fs.FileMode, write func(name string) error) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := notDir(path); err != nil {
		return err
	}
	tmpDir, err := os.MkdirTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmpDir)
	name := filepath.Join(tmpDir, base)
	if err := write(name); err != nil {
		return err
	}
	f, err := Open(name)
	if err != nil {
		return err
	}
	werr := f.Chmod(perm)
	if werr == nil {
		werr = f.Sync()
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return werr
	}
	if err := os.Rename(name, path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// notDir returns an error when path is a directory (not a link to one): a
// rename would fail on it only after the work of writing.
func notDir(path string) error {
	fi, err := os.Lstat(path)
	if err == nil && fi.IsDir() {
		return &os.PathError{Op: "write", Path: path, Err: errors.New("is a directory")}
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// syncDir fsyncs the directory dir, so that a rename in it survives a
// crash; where a directory cannot be synced it does nothing. It opens dir
// with O_NONBLOCK, so that a FIFO swapped in for dir cannot block it.
func syncDir(dir string) {
	if d, err := openNonblock(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
