package main

import "github.com/dptune/dptune/internal/fsx"

// maxSettingsFile caps the bytes of a settings file (a search space, a
// network spec) hashed into the settings' digest: their loaders refuse far
// smaller files, so a larger one fails the command anyway.
const maxSettingsFile = 64 << 20

// fileDigest is the settings' digest of the file at path (fsx.FileDigest).
func fileDigest(path string) string { return fsx.FileDigest(path, maxSettingsFile) }

// dirDigest is the settings' digest of the directory dir (fsx.DirDigest).
func dirDigest(dir string) string { return fsx.DirDigest(dir) }
