package features

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// makeTemp makes a temporary directory the way a cache write does
// (fsx.WritePathAtomic for the cache file at p: os.MkdirTemp beside it,
// "." + name + ".*.tmp") holding part of the file, last changed age ago.
func makeTemp(t *testing.T, p string, age time.Duration) (dir, file string) {
	t.Helper()
	dir, err := os.MkdirTemp(filepath.Dir(p), "."+filepath.Base(p)+".*.tmp")
	if err != nil {
		t.Fatal(err)
	}
	file = filepath.Join(dir, filepath.Base(p))
	if err := os.WriteFile(file, []byte(magic+"partial private features"), 0o600); err != nil {
		t.Fatal(err)
	}
	then := time.Now().Add(-age)
	for _, q := range []string{file, dir} {
		if err := os.Chtimes(q, then, then); err != nil {
			t.Fatal(err)
		}
	}
	return dir, file
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// Load removes, and reports, the temporary directory a write killed before
// it finished left in the cache directory (here made as the write makes
// it, last changed an hour ago), while it keeps: a live writer's (its file
// locked, however old), one changed a moment ago (a writer that has not
// locked its file yet), a directory or file of another name, an entry of
// the pattern's name that is a symbolic link to a directory (and what it
// links to), and a regular file of the pattern's name.
func TestLoadRemovesWhatKilledWritesLeft(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	f, d := small(t, 20, 5)
	dir := t.TempDir()
	p := Path(dir, f, d)
	staleDir, _ := makeTemp(t, p, time.Hour)
	liveDir, liveFile := makeTemp(t, p, time.Hour)
	freshDir, _ := makeTemp(t, p, 0)
	lf, err := os.OpenFile(liveFile, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	lockWriting(lf)
	old := time.Now().Add(-time.Hour)
	foreign := filepath.Join(dir, ".mine.tmp")
	outside := t.TempDir()
	link := filepath.Join(dir, "."+strings.Repeat("a", 40)+".feat.123.tmp")
	plain := filepath.Join(dir, "."+strings.Repeat("b", 40)+".feat.456.tmp")
	for _, err := range []error{
		os.Mkdir(foreign, 0o700),
		os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o600),
		os.Symlink(outside, link),
		os.WriteFile(plain, []byte("x"), 0o600),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{foreign, outside, plain} {
		os.Chtimes(q, old, old)
	}

	_, _, warnings := load(t, dir, f, d)
	if exists(staleDir) {
		t.Errorf("the killed write's %s is still there", staleDir)
	}
	if !strings.Contains(strings.Join(warnings, "\n"), "removed 1 partial file") {
		t.Errorf("warnings %q do not report the removal", warnings)
	}
	for _, q := range []string{liveDir, liveFile, freshDir, foreign, link, plain, filepath.Join(outside, "keep")} {
		if !exists(q) {
			t.Errorf("%s was removed", q)
		}
	}
	// The write itself left nothing behind, and its file is the cache.
	if _, hit, _ := load(t, dir, f, d); !hit {
		t.Error("the features were not cached")
	}
	// Once the live writer is gone (its lock dropped), its leftovers go too.
	lf.Close()
	load(t, dir, f, d)
	if exists(liveDir) {
		t.Errorf("%s outlived its writer", liveDir)
	}
}

// A write killed for real (SIGKILL while it holds its lock) leaves a
// temporary directory whose lock the kernel dropped: the next Load, an
// hour later by its clock, removes it. The child is this test binary
// holding the lock the way write does until it is killed.
func TestLockOfAKilledWriterIsDropped(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock")
	}
	if path := os.Getenv("DPTUNE_FEATURES_LOCK_CHILD"); path != "" {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			os.Exit(3)
		}
		lockWriting(f)
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	f, d := small(t, 20, 6)
	dir := t.TempDir()
	tmp, file := makeTemp(t, Path(dir, f, d), time.Hour)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockOfAKilledWriterIsDropped$")
	cmd.Env = append(os.Environ(), "DPTUNE_FEATURES_LOCK_CHILD="+file)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		cmd.Process.Kill()
		t.Fatalf("child: %q, %v", buf, err)
	}
	if probeLock(file) != locked {
		t.Error("a live writer's file does not read as locked")
	}
	if removeStale(dir, time.Now()) != 0 || !exists(tmp) {
		t.Fatal("a live writer's directory was removed")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if n := removeStale(dir, time.Now()); n != 1 || exists(tmp) {
		t.Errorf("after the writer was killed: removed %d, %s still there: %v", n, tmp, exists(tmp))
	}
}
