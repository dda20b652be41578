package job

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/dptune/dptune/dpsgd/accounting"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// Release is everything a job may publish and nothing else: the model (nil
// when nothing but the ledger is released), the selected hyperparameters and
// the released score of a tuning, the guarantee, the ledger of every
// mechanism that touched the private data, and Report, the report.json of the
// job (*TrainReport, *TuneReport or *DoublingReport), which holds the same
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
// ledger (model.json, params.bin) when there is one, and the report as
// report.json — or, for a failed job, failed-report.json. It creates dir.
// What dir holds afterwards is this release alone: a failed job moves an
// earlier release's model.json, params.bin and report.json into
// dir/previous (replacing what was there), so that it neither is clobbered
// nor seems to belong to the failed job; a job that did not fail removes an
// earlier failed-report.json.
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
	if r.Model != nil && r.hyper != nil && !r.Failed {
		h, err := json.Marshal(r.hyper)
		if err != nil {
			return err
		}
		l, err := json.Marshal(r.Ledger)
		if err != nil {
			return err
		}
		if err := r.Model.Save(dir, model.Metadata{Hyperparameters: h, Ledger: l}); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, file), append(js, '\n'), 0o644)
}

// releaseFiles are the files Save writes for a release that did not fail.
var releaseFiles = []string{"model.json", "params.bin", "report.json"}

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
	prev := filepath.Join(dir, "previous")
	if err := os.RemoveAll(prev); err != nil {
		return err
	}
	if err := os.Mkdir(prev, 0o755); err != nil {
		return err
	}
	for _, name := range stale {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(prev, name)); err != nil {
			return err
		}
	}
	return nil
}

// WriteDiagnostics writes d to path with mode 0600, labelled NOT PRIVATE.
func (d *NotPrivateDiagnostics) WriteDiagnostics(path string) error {
	js, err := json.MarshalIndent(map[string]any{
		"warning": "NOT PRIVATE: the number of runs and every run's score; the privacy guarantee needs them hidden. For the data curator only.",
		"runs":    d.Runs,
	}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(js, '\n'), 0o600)
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
