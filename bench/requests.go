package bench

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dptune/dptune/audit"
	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/job"
)

// PerSampleRequest is a per-sample measurement as a person asks for it
// (the flags of dptune bench persample, whose names the errors speak):
// Check refuses what cannot be measured, Write writes the figures.
type PerSampleRequest struct {
	BatchSizes    []int
	Steps, Warmup int
	// JSON and Plot, if not "", are files for the figures and their plot
	// (a .png).
	JSON, Plot string
}

// Check refuses, before any data is read, a measurement of no steps or
// batch sizes, a negative warmup, a plot file that is not a .png, a batch
// size outside [1, n] (n the nominal training-set size), and output files
// that cannot be written. Errors wrap job.ErrInvalid.
func (r PerSampleRequest) Check(n int) error {
	switch {
	case r.Steps < 1:
		return job.Invalidf("--steps %d must be at least 1", r.Steps)
	case r.Warmup < 0:
		return job.Invalidf("--warmup %d is negative", r.Warmup)
	case len(r.BatchSizes) == 0:
		return job.Invalidf("--batch-size needs at least one size")
	case r.Plot != "" && !strings.HasSuffix(strings.ToLower(r.Plot), ".png"):
		return job.Invalidf("--plot %q must name a .png file", r.Plot)
	}
	for _, b := range r.BatchSizes {
		if b < 1 || b > n {
			return job.Invalidf("--batch-size %d is outside [1, %d]", b, n)
		}
	}
	for _, o := range []struct{ flag, path string }{{"json", r.JSON}, {"plot", r.Plot}} {
		if o.path == "" {
			continue
		}
		if err := job.CheckFile(o.path); err != nil {
			return job.Invalidf("--%s: %v", o.flag, err)
		}
	}
	return nil
}

// Write writes rep to r.JSON and its plot to r.Plot, each if asked for.
func (r PerSampleRequest) Write(rep PerSampleReport) error {
	if r.JSON != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err == nil {
			err = os.WriteFile(r.JSON, append(b, '\n'), 0o644)
		}
		if err != nil {
			return err
		}
	}
	if r.Plot != "" {
		return PlotPerSample(rep, r.Plot)
	}
	return nil
}

// CheckRequest is Check for c as dptune bench audit's flags set it, before
// any work: trial counts outside [job.MinAuditTrials, audit.MaxTrials],
// DP-SGD steps outside [1, dpsgd.MaxSteps], base ε that Check refuses, an
// unwritable Out. Errors wrap job.ErrInvalid (but a cancelled calibration
// returns ctx's error) and name the flag at fault.
func (c AuditFigureConfig) CheckRequest(ctx context.Context) error {
	switch {
	case c.Trials < job.MinAuditTrials || c.Trials > audit.MaxTrials:
		return job.Invalidf("--trials %d is outside [%d, %d]", c.Trials, job.MinAuditTrials, audit.MaxTrials)
	case c.DPSGDTrials < job.MinAuditTrials || c.DPSGDTrials > audit.MaxTrials:
		return job.Invalidf("--dpsgd-trials %d is outside [%d, %d]", c.DPSGDTrials, job.MinAuditTrials, audit.MaxTrials)
	case c.DPSGDSteps < 1 || c.DPSGDSteps > dpsgd.MaxSteps:
		return job.Invalidf("--dpsgd-steps %d is outside [1, %d]", c.DPSGDSteps, dpsgd.MaxSteps)
	}
	if err := c.Check(ctx); err != nil {
		if errors.Is(err, context.Canceled) {
			return err
		}
		return job.Invalidf("--base-epsilons: %v", err)
	}
	if err := job.CheckOut(c.Out); err != nil {
		return job.Invalidf("--out: %v", err)
	}
	return nil
}

// WriteAudit writes the audit res into dir: audit.json (res.Save) and its
// plot audit.png (PlotAudit), each through a temporary file of a random
// name renamed into place, so that a symbolic link planted in dir is
// replaced, not written through.
func WriteAudit(dir string, res *job.AuditResult) error {
	if err := res.Save(dir); err != nil {
		return err
	}
	return fsx.WritePathAtomic(filepath.Join(dir, "audit.png"), 0o644, func(name string) error {
		return PlotAudit(res.Stats0, res.Stats1, res.Detail.Threshold, res.EpsilonLower, res.EpsilonUpper, name)
	})
}

// MaxScatterSeconds bounds ScatterRequest.Seconds, one throughput row's
// measuring time.
const MaxScatterSeconds = 600

// ScatterRequest is the scattering transform's measurement as a person asks
// for it (the flags of dptune bench scatter, whose names the errors
// speak): Seconds per throughput row; with Models, one DP-SGD epoch of each
// built-in scatter network on its dataset's cached features in
// FeatureCache, the datasets' directories in DataDirs (by dataset name).
type ScatterRequest struct {
	Seconds      float64
	Models       bool
	DataDirs     map[string]string
	FeatureCache string
	Out          string
	Seed         uint64
}

// Config checks r and returns its ScatterConfig, refusing before any work,
// with an error wrapping job.ErrInvalid: Seconds outside (0,
// MaxScatterSeconds], an unknown dataset in DataDirs, an unwritable Out.
func (r ScatterRequest) Config() (ScatterConfig, error) {
	if !(r.Seconds > 0 && r.Seconds <= MaxScatterSeconds) {
		return ScatterConfig{}, job.Invalidf("--seconds %v is outside (0, %d]", r.Seconds, MaxScatterSeconds)
	}
	for name := range r.DataDirs {
		if _, ok := data.Lookup(name); !ok {
			return ScatterConfig{}, job.Invalidf("--data-dirs: unknown dataset %q (want %s)", name, data.NamesList())
		}
	}
	if err := job.CheckOut(r.Out); err != nil {
		return ScatterConfig{}, job.Invalidf("--out: %v", err)
	}
	cfg := ScatterConfig{Duration: time.Duration(r.Seconds * float64(time.Second)), Seed: r.Seed, FeatureDir: r.FeatureCache}
	if r.Models {
		cfg.Networks = ScatterNetworks(r.DataDirs)
	}
	return cfg, nil
}

// CheckRequest refuses, before any work, a report without input
// directories, an input that is not a directory and an unwritable Out,
// with errors wrapping job.ErrInvalid that name the flags of dptune bench
// report.
func (c ReportConfig) CheckRequest() error {
	if len(c.Inputs) == 0 {
		return job.Invalidf("--from needs at least one directory")
	}
	for _, d := range c.Inputs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			return job.Invalidf("--from %s is not a directory", d)
		}
	}
	if err := job.CheckOut(c.Out); err != nil {
		return job.Invalidf("--out: %v", err)
	}
	return nil
}

// CheckDoublingRequest refuses, before any work, DoublingFigures' settings
// that cannot draw: seeds or reps below 1, an unwritable dir. Errors wrap
// job.ErrInvalid and name the flags of dptune bench doubling.
func CheckDoublingRequest(dir string, seeds, reps int) error {
	if seeds < 1 || reps < 1 {
		return job.Invalidf("--seeds and --reps must be at least 1")
	}
	if err := job.CheckOut(dir); err != nil {
		return job.Invalidf("--out: %v", err)
	}
	return nil
}
