package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// maxSettingsFile caps the bytes of a settings file (a search space, a
// network spec) hashed into the settings' digest: their loaders refuse far
// smaller files, so a larger one fails the command anyway.
const maxSettingsFile = 64 << 20

// fileDigest is hex SHA-256 of the first maxSettingsFile bytes of the
// regular file at path, or its error.
func fileDigest(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "error " + err.Error()
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.LimitReader(f, maxSettingsFile)); err != nil {
		return "error " + err.Error()
	}
	return hex.EncodeToString(h.Sum(nil))
}

// dirDigest is hex SHA-256 of dir's absolute path and, for each regular
// file directly in it or linked from it (in name order), its name, size and
// modification time; or why dir is not a readable directory.
func dirDigest(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "error " + err.Error()
	}
	// Stat first: opening a FIFO to read it as a directory would block.
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
