package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/job"
)

// SeedsConfig is a measurement of networks at their own published
// settings: each network trained once per seed by DP-SGD at (ε, δ) on the
// whole training set, with the settings job.NetworkDefaultsOn gives it on
// the dataset, as `dptune train --model NET --epsilon ε --seed S` does.
type SeedsConfig struct {
	// Sources are the networks, each as its dataset's Source
	// (job.Source.WithModel); every one must have published settings.
	Sources        []job.Source
	Epsilon, Delta float64
	Seeds          []uint64
	// Dir holds seeds.json and the cache of finished runs (Dir/runs).
	Dir string
	// Progress, if not nil, receives a line per run started.
	Progress func(string)
}

// SeedsRun is one run of a SeedsReport.
type SeedsRun struct {
	Network      string            `json:"network"`
	Seed         uint64            `json:"seed"`
	Settings     job.TrainDefaults `json:"settings"`
	TestAccuracy float64           `json:"test_accuracy"`
	Epsilon      float64           `json:"epsilon"`
	Noise        float64           `json:"noise_multiplier"`
	Seconds      float64           `json:"seconds"`
}

// SeedsCell is one network over the seeds: the mean test accuracy and its
// 95% Student-t interval half-width.
type SeedsCell struct {
	Network  string            `json:"network"`
	Settings job.TrainDefaults `json:"settings"`
	Seeds    int               `json:"seeds"`
	Accuracy float64           `json:"mean_test_accuracy"`
	CI95     float64           `json:"ci95"`
}

// SeedsReport is seeds.json.
type SeedsReport struct {
	Dataset  string      `json:"dataset"`
	Epsilon  float64     `json:"epsilon"`
	Delta    float64     `json:"delta"`
	Runs     []SeedsRun  `json:"runs"`
	Cells    []SeedsCell `json:"cells"`
	Command  string      `json:"command,omitempty"`
	CPUs     int         `json:"cpus"`
	Cached   int         `json:"runs_from_cache"`
	Wall     float64     `json:"wall_seconds"`
	Finished string      `json:"finished"`
}

// Seeds trains every network of cfg at every seed, reusing the runs a
// previous call with the same settings finished (Dir/runs), and returns
// the report (Save writes it). A network without published settings on
// its dataset, or networks of different datasets, are an error wrapping
// job.ErrInvalid, before any run.
func Seeds(ctx context.Context, cfg SeedsConfig) (*SeedsReport, error) {
	if len(cfg.Sources) == 0 || len(cfg.Seeds) == 0 {
		return nil, fmt.Errorf("%w: a seeds measurement needs networks and seeds", job.ErrInvalid)
	}
	settings := make([]job.TrainDefaults, len(cfg.Sources))
	for i, src := range cfg.Sources {
		d, ok := job.NetworkDefaultsOn(src.Arch.Spec, src.Name)
		if !ok {
			return nil, fmt.Errorf("%w: %s has no published settings on %s", job.ErrInvalid, src.Arch.Spec.Name, src.Name)
		}
		if src.Name != cfg.Sources[0].Name {
			return nil, fmt.Errorf("%w: networks of %s and %s in one measurement", job.ErrInvalid, cfg.Sources[0].Name, src.Name)
		}
		settings[i] = d
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "runs"), 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &SeedsReport{Dataset: cfg.Sources[0].Name, Epsilon: cfg.Epsilon, Delta: cfg.Delta, CPUs: runtime.NumCPU()}
	for i, src := range cfg.Sources {
		d := settings[i]
		var acc []float64
		for _, seed := range cfg.Seeds {
			path := filepath.Join(cfg.Dir, "runs", fmt.Sprintf("%s-eps%g-seed%d.json", src.Arch.Spec.Name, cfg.Epsilon, seed))
			run, ok := readSeedsRun(path, src.Arch.Spec.Name, seed, d, cfg.Delta)
			if ok {
				rep.Cached++
			} else {
				if cfg.Progress != nil {
					cfg.Progress(fmt.Sprintf("%s, seed %d", src.Arch.Spec.Name, seed))
				}
				s := seed
				t := time.Now()
				rel, _, err := job.Train(ctx, job.TrainSpec{Data: src, Epsilon: cfg.Epsilon, Delta: cfg.Delta, ClipNorm: d.ClipNorm, BatchSize: d.BatchSize,
					Epochs: d.Epochs, LearningRate: d.LearningRate, Momentum: d.Momentum, Seed: &s})
				if err != nil {
					return nil, fmt.Errorf("%s, seed %d: %w", src.Arch.Spec.Name, seed, err)
				}
				r := rel.Report.(*job.TrainReport)
				run = SeedsRun{Network: src.Arch.Spec.Name, Seed: seed, Settings: d, Noise: r.NoiseMultiplier, Seconds: time.Since(t).Seconds()}
				if r.TestAccuracy != nil {
					run.TestAccuracy = *r.TestAccuracy
				}
				if rel.Epsilon != nil {
					run.Epsilon = *rel.Epsilon
				}
				b, err := json.MarshalIndent(struct {
					Delta float64  `json:"delta"`
					Run   SeedsRun `json:"run"`
				}{cfg.Delta, run}, "", "  ")
				if err != nil {
					return nil, err
				}
				if err := fsx.WriteFileAtomic(path, append(b, '\n'), 0o644); err != nil {
					return nil, err
				}
			}
			rep.Runs = append(rep.Runs, run)
			acc = append(acc, run.TestAccuracy)
		}
		c := SeedsCell{Network: src.Arch.Spec.Name, Settings: d, Seeds: len(acc)}
		c.Accuracy, c.CI95 = meanCI95(acc)
		rep.Cells = append(rep.Cells, c)
	}
	rep.Wall = time.Since(start).Seconds()
	rep.Finished = time.Now().UTC().Format(time.RFC3339)
	return rep, nil
}

// readSeedsRun reads a cached run, if it is the run of these settings.
func readSeedsRun(path, network string, seed uint64, d job.TrainDefaults, delta float64) (SeedsRun, bool) {
	b, err := fsx.ReadFile(path, maxReportInput)
	if err != nil {
		return SeedsRun{}, false
	}
	var c struct {
		Delta float64  `json:"delta"`
		Run   SeedsRun `json:"run"`
	}
	if json.Unmarshal(b, &c) != nil || c.Delta != delta || c.Run.Network != network || c.Run.Seed != seed || c.Run.Settings != d {
		return SeedsRun{}, false
	}
	return c.Run, true
}

// Save writes rep as dir/seeds.json.
func (rep *SeedsReport) Save(dir string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(filepath.Join(dir, "seeds.json"), append(b, '\n'), 0o644)
}

// WriteSeedsMarkdown writes rep's table: each network's settings and
// source, its test accuracy at every seed and their mean.
func WriteSeedsMarkdown(w *strings.Builder, rep *SeedsReport) {
	fmt.Fprintf(w, "Each network trained by DP-SGD at ε = %g, δ = %g with its own published settings on %s (one run per seed, seeded noise), on the whole training set, tested on the test set:\n\n", rep.Epsilon, rep.Delta, rep.Dataset)
	fmt.Fprintln(w, "| network | settings | test accuracy per seed | mean ± 95% interval |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, c := range rep.Cells {
		var per []string
		for _, r := range rep.Runs {
			if r.Network == c.Network {
				per = append(per, fmt.Sprintf("%.4f (seed %d)", r.TestAccuracy, r.Seed))
			}
		}
		s := c.Settings
		fmt.Fprintf(w, "| %s | batch %d, %d epochs, η = %g, momentum %g, C = %g: %s | %s | %s |\n", c.Network, s.BatchSize, s.Epochs, s.LearningRate, s.Momentum, s.ClipNorm, s.Source,
			strings.Join(per, ", "), meanWithCI(c.Accuracy, c.CI95, c.Seeds))
	}
}

// seedsSection is the report's section of a seeds.json.
func seedsSection(w *strings.Builder, f found) ([]Verdict, error) {
	var r SeedsReport
	if err := json.Unmarshal(f.raw, &r); err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "## Networks at their published settings on %s (`dptune bench seeds`)\n\nCommand: `%s`; %d CPUs; wall time %.0f s (%d runs from the cache); finished %s.\n\n",
		r.Dataset, r.Command, r.CPUs, r.Wall, r.Cached, r.Finished)
	WriteSeedsMarkdown(w, &r)
	fmt.Fprintln(w)
	return nil, nil
}

func init() { registerReportKind(reportKind{name: "seeds.json", rank: 15, section: seedsSection}) }
