package features

import (
	"os"
	"path/filepath"
	"regexp"
	"time"
)

// A cache write goes through a temporary directory that fsx.WritePathAtomic
// makes beside the cache file, named "." + the file's name + "." + random
// digits + ".tmp", and removes when it is done. A process killed while
// writing (SIGKILL, or a second Ctrl-C) leaves that directory behind, with
// part of the private features in it; Load removes such leftovers from the
// cache directory before it reads (removeStale).
//
// Only the directories this package makes are touched: a name of exactly
// tempName's form, a directory itself (not a symbolic link to one), and
// never one a live writer is using. The writer holds an exclusive lock
// (flock(2), which the kernel drops when a process dies) on the file it
// writes for the whole write, so a directory whose file is locked is in
// use. A directory is also kept while anything in it changed within
// staleAfter (a writer between making the directory and locking its file)
// or, where locks cannot be taken or tested, within unlockedStaleAfter.

// tempName matches the temporary directories of cache writes: "." + the
// cache file's name (40 hexadecimal digits, ".feat") + "." + os.MkdirTemp's
// random digits + ".tmp".
var tempName = regexp.MustCompile(`^\.[0-9a-f]{40}\.feat\.[0-9]+\.tmp$`)

const (
	// staleAfter is how long an unlocked temporary directory is kept
	// after its last change.
	staleAfter = time.Minute
	// unlockedStaleAfter is the same where locks cannot tell whether a
	// writer is alive (a platform or filesystem without flock).
	unlockedStaleAfter = 24 * time.Hour
)

// lockState is what probing a file's lock found.
type lockState int

const (
	unlocked lockState = iota // no process holds it
	locked                    // a writer holds it: in use
	unknown                   // locks cannot be taken or tested here
)

// removeStale removes the temporary directories of cache writes in dir
// that were left by a process that died while writing (see above), and
// returns how many it removed. Errors are ignored: a leftover that cannot
// be removed now is tried again on the next run.
func removeStale(dir string, now time.Time) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	removed := 0
	for _, e := range entries {
		if !tempName.MatchString(e.Name()) || !e.IsDir() || e.Type()&os.ModeSymlink != 0 {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if stale(p, now) && os.RemoveAll(p) == nil {
			removed++
		}
	}
	return removed
}

// stale reports whether the temporary directory p was left by a dead
// writer: no file in it is locked, and nothing in it changed within
// staleAfter (unlockedStaleAfter where locks cannot be tested).
func stale(p string, now time.Time) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return false
	}
	newest := fi.ModTime()
	entries, err := os.ReadDir(p)
	if err != nil {
		return false
	}
	wait := staleAfter
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return false
		}
		if info.ModTime().After(newest) {
			newest = info.ModTime()
		}
		if !info.Mode().IsRegular() {
			continue
		}
		switch probeLock(filepath.Join(p, e.Name())) {
		case locked:
			return false
		case unknown:
			wait = unlockedStaleAfter
		}
	}
	return now.Sub(newest) > wait
}
