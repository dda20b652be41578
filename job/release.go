package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// Release is everything a job may publish and nothing else: the model (nil
// when nothing but the ledger is released), the selected hyperparameters and
// the released score of a tuning, the guarantee, the ledger of every
// mechanism that touched the private data, and Report, the report.json of the
// job (*TrainReport, *TuneReport or a partitioned tuner's own), which holds the same
// facts with the job's public settings. Never the number of tuning runs, the
// other runs' scores, the seed, the wall time or a count of the private data.
type Release struct {
	Model    *model.Net
	Selected map[string]float64 // tuning only; nil when nothing was selected
	Score    *float64           // the selected run's released validation score
	// Epsilon is the ledger's ε at Delta by Accountant; nil when unbounded
	// or not private.
	Epsilon    *float64
	Delta      float64
	Accountant string
	Ledger     accounting.Ledger
	Report     any
	// Failed is true when the job failed after touching the data: only
	// the ledger is released, in failed-report.json.
	Failed bool

	hyper map[string]any // saved with the model
	input model.Input    // saved with the model
}

// NotPrivateDiagnostics is what a job shows the data curator beside its
// release. NOT PRIVATE: it reveals what the guarantee needs hidden (the
// number of tuning runs and every run's score) or counts the private data
// (the realised batch sizes, the wall time). Never publish it.
type NotPrivateDiagnostics struct {
	Runs          []tuning.RunRecord // every tuning run, when asked for
	MeanBatchSize float64            // realised mean batch size of a training run
	WallSeconds   float64
}

// Save writes the release to dir: the model with its hyperparameters and
// ledger (model.json, params.bin, and buffers.bin for a network with
// buffers) when there is one, and the report as
// report.json — or, for a failed job, failed-report.json. It creates dir.
// What dir holds afterwards is this release alone: a failed job moves an
// earlier release's model.json, params.bin and report.json into
// dir/previous (replacing what was there), so that it neither is clobbered
// nor seems to belong to the failed job; a job that did not fail removes an
// earlier failed-report.json. If a write fails (a full disk), Save removes
// what it was writing, partial files included, and returns the error: dir
// never holds a half-written release.
func (r *Release) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := clearStale(dir, r.Failed); err != nil {
		return err
	}
	file := "report.json"
	if r.Failed {
		file = "failed-report.json"
	}
	// The report first: a report that cannot be encoded must not leave a
	// model without one.
	js, err := json.MarshalIndent(r.Report, "", "  ")
	if err != nil {
		return err
	}
	written := []string{file}
	if r.Model != nil && r.hyper != nil && !r.Failed {
		written = releaseFiles
		h, err := json.Marshal(r.hyper)
		if err != nil {
			return err
		}
		l, err := json.Marshal(r.Ledger)
		if err != nil {
			return err
		}
		meta := model.Metadata{Hyperparameters: h, Ledger: l}
		if r.input.Dataset != "" {
			meta.Input = &r.input
		}
		if err := r.Model.Save(dir, meta); err != nil {
			removeAll(dir, written)
			return err
		}
		if len(r.Model.Buffers) == 0 {
			// An earlier release's buffers are not this model's.
			if err := os.Remove(filepath.Join(dir, "buffers.bin")); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	if err := writeFileAtomic(filepath.Join(dir, file), append(js, '\n')); err != nil {
		removeAll(dir, written)
		return err
	}
	return nil
}

// removeAll removes dir's files called names after a failed Save (each
// write removes its own temporary file when it fails): no half-written
// release is left.
func removeAll(dir string, names []string) {
	for _, name := range names {
		os.Remove(filepath.Join(dir, name))
	}
}

// writeFileAtomic writes b to path with mode 0644 through a temporary file
// of a random name renamed into place (fsx.WriteFileAtomic): a symbolic
// link planted at path or beside it is replaced, never written through.
func writeFileAtomic(path string, b []byte) error {
	return fsx.WriteFileAtomic(path, b, 0o644)
}

// releaseFiles are the files Save writes for a release that did not fail.
// buffers.bin holds a model's buffers (a datanorm layer's statistics), for
// a network that has some.
var releaseFiles = []string{"model.json", "params.bin", "buffers.bin", "report.json"}

// clearStale moves an earlier release in dir to dir/previous when failed,
// else removes an earlier failed-report.json.
func clearStale(dir string, failed bool) error {
	if !failed {
		if err := os.Remove(filepath.Join(dir, "failed-report.json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	var stale []string
	for _, name := range releaseFiles {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			stale = append(stale, name)
		}
	}
	if len(stale) == 0 {
		return nil
	}
	// A symbolic link at previous is refused, not replaced: whoever
	// planted it meant the earlier release to land elsewhere. The moves go
	// through an os.Root of dir, so a link swapped in for previous after
	// the checks cannot take them outside dir either.
	prev := filepath.Join(dir, "previous")
	if fi, err := os.Lstat(prev); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link, not a directory: the earlier release is left in place", prev)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.RemoveAll("previous"); err != nil {
		return err
	}
	if err := root.Mkdir("previous", 0o755); err != nil {
		return err
	}
	if fi, err := root.Lstat("previous"); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s was replaced by something that is not a directory: the earlier release is left in place", prev)
	}
	for _, name := range stale {
		if err := root.Rename(name, filepath.Join("previous", name)); err != nil {
			return err
		}
	}
	return nil
}

// WriteDiagnostics writes d to path with mode 0600, labelled NOT PRIVATE,
// through a temporary file renamed into place (fsx.WriteFileAtomic): a
// symbolic link at path is replaced, never written through.
func (d *NotPrivateDiagnostics) WriteDiagnostics(path string) error {
	js, err := json.MarshalIndent(map[string]any{
		"warning": "NOT PRIVATE: the number of runs and every run's score; the privacy guarantee needs them hidden. For the data curator only.",
		"runs":    d.Runs,
	}, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(path, append(js, '\n'), 0o600)
}

// releaseSlack is what a release needs beside its parameters: model.json,
// report.json and the temporary copies written before each rename (a few
// kilobytes each; a megabyte leaves room for long ledgers).
const releaseSlack = 1 << 20

// ReleaseBytes is about the most a release of a network of arch takes on
// disk: its float32 parameters and buffers and the JSON files.
func ReleaseBytes(arch model.Arch) (int64, error) {
	n, err := model.NewZero(arch)
	if err != nil {
		return 0, invalidf("%v", err)
	}
	return 4*int64(n.NumParams()+len(n.Buffers)) + releaseSlack, nil
}

// CheckRoom returns an error wrapping ErrInvalid when the filesystem
// holding dir (which must exist: see CheckOut) has less than need bytes
// free for this process, so that a job is refused before it spends any
// privacy budget rather than failing at its last write. Where the free
// space cannot be read it returns nil.
func CheckRoom(dir string, need int64) error {
	free, ok := freeBytes(dir)
	if ok && free < need {
		return invalidf("%s has %d bytes free; the release needs about %d", dir, free, need)
	}
	return nil
}

// CheckFile returns an error wrapping ErrInvalid unless a file can be
// written at path: call it before a job for every output file, so that no
// work is lost to an unwritable path. It refuses a directory, a FIFO or a
// device at path, an existing file it cannot open for writing, and a
// directory in which it cannot create a file (it creates and removes one;
// it creates the missing parent directories). An existing file is left
// unchanged.
func CheckFile(path string) error {
	if path == "" {
		return invalidf("an empty file name")
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return invalidf("%s is a directory, not a file", path)
	case err == nil && !fi.Mode().IsRegular():
		return invalidf("%s is not a regular file", path)
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return invalidf("%s is not writable: %v", path, err)
		}
		return f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return invalidf("%s: %v", path, err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return invalidf("%s: %s is not a writable directory: %v", path, dir, err)
	}
	f, err := os.CreateTemp(dir, ".dptune-write-check-*")
	if err != nil {
		return invalidf("%s: cannot create a file in %s: %v", path, dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// CheckOut returns an error wrapping ErrInvalid unless a release can be
// written to dir: call it before a job, so that no work is lost to an
// unwritable directory. It creates dir.
func CheckOut(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return invalidf("%s is not a writable directory: %v", dir, err)
	}
	f, err := os.CreateTemp(dir, ".dptune-write-check-*")
	if err != nil {
		return invalidf("%s is not writable: %v", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// withInput returns a function that records src's Input in a job's
// release (saved with its model) and passes the job's results through.
func withInput(src Source) func(*Release, *NotPrivateDiagnostics, error) (*Release, *NotPrivateDiagnostics, error) {
	return func(rel *Release, diag *NotPrivateDiagnostics, err error) (*Release, *NotPrivateDiagnostics, error) {
		if rel != nil {
			rel.input = src.Input
		}
		return rel, diag, err
	}
}
