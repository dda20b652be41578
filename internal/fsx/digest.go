package fsx

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// FileDigest is hex SHA-256 of the first limit bytes of the file at path,
// or "error " and why it cannot be read: a setting's digest, which a file
// that cannot be read never matches.
func FileDigest(path string, limit int64) string {
	f, err := os.Open(path)
	if err != nil {
		return "error " + err.Error()
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, limit)); err != nil {
		return "error " + err.Error()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// DirDigest is hex SHA-256 of dir's absolute path and, for each regular
// file directly in it or linked from it (in name order), its name, size
// and modification time; or why dir is not a readable directory. It never
// opens dir before it knows dir is one (opening a FIFO would block).
func DirDigest(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "error " + err.Error()
	}
	if st, err := os.Stat(abs); err != nil || !st.IsDir() {
		return fmt.Sprintf("not a directory %q", abs)
	}
	entries, err := os.ReadDir(abs)
	if err != nil {
		return "error " + err.Error()
	}
	h := sha256.New()
	fmt.Fprintf(h, "%q\n", abs)
	for _, e := range entries {
		info, err := os.Stat(filepath.Join(abs, e.Name())) // through links
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		fmt.Fprintf(h, "%q %d %d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))
}
