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

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/job"
)

// SeedsConfig is a measurement of networks at their own published
// settings: each network trained once per seed by DP-SGD at (ε, δ) on the
// whole training set, with the settings job.NetworkDefaultsOn gives it on
// the dataset, as `dptune train --model NET --epsilon ε --seed S` does.
type SeedsConfig struct {
	// Sources are the networks, each as its dataset's Source
	// (job.Source.WithModel); every one must have published settings,
	// unless Default is given.
	Sources []job.Source
	// Default, if not nil, are the settings of every network, with their
	// source, in place of its published ones (for a network that has
	// none, as bench compare's --default-settings).
	Default        *job.TrainDefaults
	Epsilon, Delta float64
	Seeds          []uint64
	// Clipping is every run's clipping rule: dpsgd.FlatClipping (the zero
	// value: to the network's published clipping norm C), or
	// dpsgd.AutomaticClipping (Bu et al. 2023, AUTO-S) with stability
	// constant AutoClipGamma (0: dpsgd.DefaultAutoClipGamma), no clipping
	// norm, and the published learning rate η at C standing as η·C, as
	// `dptune train --clipping automatic` takes it.
	Clipping      dpsgd.Clipping
	AutoClipGamma float64
	// Dir holds seeds.json and the cache of finished runs (Dir/runs).
	Dir string
	// Progress, if not nil, receives a line per run started.
	Progress func(string)
}

// SeedsRun is one run of a SeedsReport.
type SeedsRun struct {
	Network string `json:"network"`
	Seed    uint64 `json:"seed"`
	// Settings are the run's: the published settings, or under automatic
	// clipping the published ones with η·C for η and no clipping norm (0).
	Settings job.TrainDefaults `json:"settings"`
	// Clipping is "automatic" under automatic clipping, with AutoClipGamma
	// its stability constant γ; both absent under flat clipping (so a flat
	// run's cache file is as it was).
	Clipping      string  `json:"clipping,omitempty"`
	AutoClipGamma float64 `json:"auto_clip_gamma,omitempty"`
	TestAccuracy  float64 `json:"test_accuracy"`
	Epsilon       float64 `json:"epsilon"`
	Noise         float64 `json:"noise_multiplier"`
	Seconds       float64 `json:"seconds"`
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
	Dataset string  `json:"dataset"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Clipping and AutoClipGamma are the runs' (SeedsRun's): absent under
	// flat clipping.
	Clipping      string      `json:"clipping,omitempty"`
	AutoClipGamma float64     `json:"auto_clip_gamma,omitempty"`
	Runs          []SeedsRun  `json:"runs"`
	Cells         []SeedsCell `json:"cells"`
	Command       string      `json:"command,omitempty"`
	CPUs          int         `json:"cpus"`
	Cached        int         `json:"runs_from_cache"`
	Wall          float64     `json:"wall_seconds"`
	Finished      string      `json:"finished"`
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
		if cfg.Default != nil {
			d, ok = *cfg.Default, true
			if d.BatchSize < 1 || d.BatchSize > src.NominalN || d.Epochs < 1 || !(d.LearningRate > 0) || !(d.ClipNorm > 0) || !(d.Momentum >= 0 && d.Momentum < 1) {
				return nil, fmt.Errorf("%w: settings %+v do not fit %s (n = %d)", job.ErrInvalid, d, src.Name, src.NominalN)
			}
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s has no published settings on %s", job.ErrInvalid, src.Arch.Spec.Name, src.Name)
		}
		if src.Name != cfg.Sources[0].Name {
			return nil, fmt.Errorf("%w: networks of %s and %s in one measurement", job.ErrInvalid, cfg.Sources[0].Name, src.Name)
		}
		settings[i] = cfg.runSettings(d)
	}
	clipping, gamma, err := cfg.clipping()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "runs"), 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &SeedsReport{Dataset: cfg.Sources[0].Name, Epsilon: cfg.Epsilon, Delta: cfg.Delta, Clipping: clipping, AutoClipGamma: gamma, CPUs: runtime.NumCPU()}
	for i, src := range cfg.Sources {
		d := settings[i]
		var acc []float64
		for _, seed := range cfg.Seeds {
			path := filepath.Join(cfg.Dir, "runs", fmt.Sprintf("%s%s-eps%g-seed%d.json", src.Arch.Spec.Name, clippingTag(clipping), cfg.Epsilon, seed))
			run, ok := readSeedsRun(path, SeedsRun{Network: src.Arch.Spec.Name, Seed: seed, Settings: d, Clipping: clipping, AutoClipGamma: gamma}, cfg.Delta)
			if ok {
				rep.Cached++
			} else {
				if cfg.Progress != nil {
					cfg.Progress(fmt.Sprintf("%s, seed %d", src.Arch.Spec.Name, seed))
				}
				s := seed
				t := time.Now()
				rel, _, err := seedsTrain(ctx, job.TrainSpec{Data: src, Epsilon: cfg.Epsilon, Delta: cfg.Delta, ClipNorm: d.ClipNorm, Clipping: cfg.Clipping,
					AutoClipGamma: gamma, BatchSize: d.BatchSize, Epochs: d.Epochs, LearningRate: d.LearningRate, Momentum: d.Momentum, Seed: &s})
				if err != nil {
					return nil, fmt.Errorf("%s, seed %d: %w", src.Arch.Spec.Name, seed, err)
				}
				r := rel.Report.(*job.TrainReport)
				run = SeedsRun{Network: src.Arch.Spec.Name, Seed: seed, Settings: d, Clipping: clipping, AutoClipGamma: gamma, Noise: r.NoiseMultiplier, Seconds: time.Since(t).Seconds()}
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

// seedsTrain trains one run of a seeds measurement (a test's stand-in
// sees the spec).
var seedsTrain = job.Train

// readSeedsRun reads a cached run, if it is the run want (its network,
// seed, settings and clipping) at delta.
func readSeedsRun(path string, want SeedsRun, delta float64) (SeedsRun, bool) {
	b, err := fsx.ReadFile(path, maxReportInput)
	if err != nil {
		return SeedsRun{}, false
	}
	var c struct {
		Delta float64  `json:"delta"`
		Run   SeedsRun `json:"run"`
	}
	if json.Unmarshal(b, &c) != nil || c.Delta != delta || c.Run.Network != want.Network || c.Run.Seed != want.Seed || c.Run.Settings != want.Settings ||
		c.Run.Clipping != want.Clipping || c.Run.AutoClipGamma != want.AutoClipGamma {
		return SeedsRun{}, false
	}
	return c.Run, true
}

// runSettings are the settings a run of published settings d trains with:
// d under flat clipping; under automatic clipping d's learning rate η at
// its clipping norm C as η·C, and no clipping norm (job.TuneSpec's rule).
func (cfg SeedsConfig) runSettings(d job.TrainDefaults) job.TrainDefaults {
	if cfg.Clipping == dpsgd.AutomaticClipping {
		d.LearningRate, d.ClipNorm = d.LearningRate*d.ClipNorm, 0
	}
	return d
}

// clipping is what the runs record of cfg's clipping: "" and 0 under flat
// clipping, "automatic" and its γ (dpsgd.DefaultAutoClipGamma for 0) under
// automatic clipping. An unknown rule or a γ under flat clipping is an
// error wrapping job.ErrInvalid.
func (cfg SeedsConfig) clipping() (string, float64, error) {
	switch cfg.Clipping {
	case dpsgd.FlatClipping:
		if cfg.AutoClipGamma != 0 {
			return "", 0, fmt.Errorf("%w: flat clipping takes no stability constant", job.ErrInvalid)
		}
		return "", 0, nil
	case dpsgd.AutomaticClipping:
		g := cfg.AutoClipGamma
		if g == 0 {
			g = dpsgd.DefaultAutoClipGamma
		}
		return cfg.Clipping.String(), g, nil
	}
	return "", 0, fmt.Errorf("%w: unknown clipping %v", job.ErrInvalid, cfg.Clipping)
}

// clippingTag marks an automatic-clipping run's cache file name, so that
// it never takes a flat run's place.
func clippingTag(clipping string) string {
	if clipping == "" {
		return ""
	}
	return "-" + clipping
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
	clip := ""
	if rep.Clipping != "" {
		clip = fmt.Sprintf(", with automatic clipping (Bu et al. 2023, AUTO-S, γ = %g: no clipping norm, the published η at C taken as η·C)", rep.AutoClipGamma)
	}
	fmt.Fprintf(w, "Each network trained by DP-SGD at ε = %g, δ = %g with its own published settings on %s%s (one run per seed, seeded noise), on the whole training set, tested on the test set:\n\n", rep.Epsilon, rep.Delta, rep.Dataset, clip)
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
		clipped := fmt.Sprintf("C = %g", s.ClipNorm)
		if rep.Clipping != "" {
			clipped = fmt.Sprintf("automatic clipping (γ = %g)", rep.AutoClipGamma)
		}
		fmt.Fprintf(w, "| %s | batch %d, %d epochs, η = %g, momentum %g, %s: %s | %s | %s |\n", c.Network, s.BatchSize, s.Epochs, s.LearningRate, s.Momentum, clipped, s.Source,
			strings.Join(per, ", "), meanWithCI(c.Accuracy, c.CI95, c.Seeds))
	}
}

// seedsSection is the report's section of a seeds.json.
func seedsSection(w *strings.Builder, f found) ([]Verdict, error) {
	var r SeedsReport
	if err := json.Unmarshal(f.raw, &r); err != nil {
		return nil, err
	}
	clip := ""
	if r.Clipping != "" {
		clip = " with automatic clipping"
	}
	fmt.Fprintf(w, "## Networks at their published settings%s on %s (`dptune bench seeds`)\n\nCommand: `%s`; %d CPUs; wall time %.0f s (%d runs from the cache); finished %s.\n\n",
		clip, r.Dataset, r.Command, r.CPUs, r.Wall, r.Cached, r.Finished)
	WriteSeedsMarkdown(w, &r)
	fmt.Fprintln(w)
	return nil, nil
}

func init() { registerReportKind(reportKind{name: "seeds.json", rank: 15, section: seedsSection}) }
