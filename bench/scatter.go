package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/model/features"
	"github.com/dptune/dptune/model/scatter"
)

// The scattering transform's settings in Tramèr & Boneh's ScatterNet
// models (model.Scatter(2, 8) in every built-in scatter network).
const (
	scatterJ = 2
	scatterL = 8
)

// ScatterSize is an image shape whose transform Scatter times.
type ScatterSize struct {
	Dataset string `json:"dataset"`
	C       int    `json:"c"`
	H       int    `json:"h"`
	W       int    `json:"w"`
	// Images is the number of images whose features the dataset's cache
	// holds (training and test sets), for the estimate of its build time.
	Images int `json:"images"`
}

// ScatterSizes are MNIST's 1×28×28 (70,000 images) and CIFAR-10's 3×32×32
// (60,000 images, three channel transforms each).
func ScatterSizes() []ScatterSize {
	return []ScatterSize{{Dataset: "mnist", C: 1, H: 28, W: 28, Images: 70000}, {Dataset: "cifar10", C: 3, H: 32, W: 32, Images: 60000}}
}

// ScatterNetwork is a network with a scatter front end whose DP-SGD epoch
// Scatter times on its dataset's cached features.
type ScatterNetwork struct {
	Name    string
	Dataset string
	Arch    model.Arch
	// NominalN is the training set's public size: the sampling rate is
	// BatchSize/NominalN and an epoch ⌈NominalN/BatchSize⌉ steps.
	NominalN int
	// BatchSize, LearningRate, Momentum and ClipNorm are the network's
	// own training settings (job.NetworkDefaults), or those of `dptune
	// train` for a network without them; Epochs is 0 for the latter.
	BatchSize    int
	Epochs       int
	LearningRate float64
	Momentum     float64
	ClipNorm     float64
	// Train loads the training images; nil when the dataset cannot be
	// loaded (Err says why).
	Train func() (*data.Dataset, error)
	Err   error
}

// ScatterNetworks returns the built-in networks whose first layer is
// scatter, each on the registered dataset its name ends with
// (scatter-linear-mnist on mnist), read from dataDirs[dataset] or the
// dataset's default directory.
func ScatterNetworks(dataDirs map[string]string) []ScatterNetwork {
	var out []ScatterNetwork
	for _, spec := range model.BuiltinSpecs() {
		if len(spec.Layers) == 0 {
			continue
		}
		if _, ok := spec.Layers[0].Kind.(model.ScatterSpec); !ok {
			continue
		}
		for _, name := range data.Names() {
			if !strings.HasSuffix(spec.Name, "-"+name) {
				continue
			}
			n := ScatterNetwork{Name: spec.Name, Dataset: name, BatchSize: 256, LearningRate: job.DefaultLearningRate, Momentum: job.DefaultMomentum, ClipNorm: 1}
			if d, ok := job.NetworkDefaults(spec); ok {
				n.BatchSize, n.Epochs, n.LearningRate, n.Momentum, n.ClipNorm = d.BatchSize, d.Epochs, d.LearningRate, d.Momentum, d.ClipNorm
			}
			src, err := job.Dataset(name, dataDirs[name])
			if err == nil {
				src, err = src.WithModel(spec)
			}
			if err != nil {
				n.Err = err
			} else {
				n.Arch, n.NominalN = src.Arch, src.NominalN
				n.Train = func() (*data.Dataset, error) {
					train, _, err := src.Load()
					return train, err
				}
			}
			out = append(out, n)
		}
	}
	return out
}

// ScatterConfig says what Scatter measures.
type ScatterConfig struct {
	Sizes []ScatterSize // nil: ScatterSizes()
	// Duration is how long each throughput row transforms images (at
	// least one per worker).
	Duration time.Duration
	// Workers are the goroutine counts timed for each size; nil: 1 and
	// GOMAXPROCS.
	Workers []int
	// Networks are timed for one DP-SGD epoch each on the features in
	// FeatureDir; a network whose features are not there (or not usable)
	// is reported as skipped: Scatter never builds a cache.
	Networks   []ScatterNetwork
	FeatureDir string
	Seed       uint64
	// Progress, if not nil, is told what is measured next.
	Progress func(string)
}

// ScatterRow is one throughput measurement.
type ScatterRow struct {
	Dataset        string  `json:"dataset"`
	Shape          string  `json:"shape"` // C×H×W
	Workers        int     `json:"workers"`
	Images         int     `json:"images"`
	Seconds        float64 `json:"seconds"`
	ImagesPerS     float64 `json:"images_per_s"`
	CPUMsPerImage  float64 `json:"cpu_ms_per_image"` // process CPU time (user + system) per image
	CacheImages    int     `json:"cache_images"`
	CacheSecondsEx float64 `json:"cache_seconds_estimate"` // CacheImages / ImagesPerS
}

// ScatterEpoch is one network's DP-SGD epoch on cached features, or why it
// was skipped.
type ScatterEpoch struct {
	Network    string `json:"network"`
	Dataset    string `json:"dataset"`
	Parameters int    `json:"parameters,omitempty"`
	BatchSize  int    `json:"batch_size"`
	Steps      int    `json:"steps,omitempty"`
	// Seconds is the epoch's steps (sampling, engine, noise, update),
	// without the run's one pass of data normalisation.
	Seconds    float64 `json:"seconds,omitempty"`
	ExamplesPS float64 `json:"examples_per_s,omitempty"`
	// RunSeconds is Epochs × Seconds for a network with its own settings.
	Epochs     int     `json:"epochs,omitempty"`
	RunSeconds float64 `json:"run_seconds_estimate,omitempty"`
	Skipped    string  `json:"skipped,omitempty"`
}

// ScatterReport is what Scatter measured.
type ScatterReport struct {
	J          int            `json:"J"`
	L          int            `json:"L"`
	Pixels     string         `json:"pixels"`
	Duration   float64        `json:"seconds_per_row"`
	GOMAXPROCS int            `json:"gomaxprocs"`
	Rows       []ScatterRow   `json:"rows"`
	Epochs     []ScatterEpoch `json:"epochs,omitempty"`
	LoadAvg    [2]string      `json:"loadavg_before_after"`
}

// Scatter times the scattering transform of the built-in ScatterNet models
// (kymatio's Scattering2D, J = 2, L = 8; package model/scatter) on each
// size with each worker count — images per second and CPU time per image,
// on random pixels (the transform's cost does not depend on them) — and
// one DP-SGD epoch (Poisson sampling, per-example clipping, secure noise,
// the network's own settings) of each network in cfg.Networks on its
// cached features. It stops with ctx's error when ctx is cancelled,
// returning what it measured.
func Scatter(ctx context.Context, cfg ScatterConfig) (ScatterReport, error) {
	rep := ScatterReport{J: scatterJ, L: scatterL, Pixels: "random pixels, uniform in [0, 1)", Duration: cfg.Duration.Seconds(), GOMAXPROCS: runtime.GOMAXPROCS(0)}
	rep.LoadAvg[0] = LoadAvg()
	sizes, workers := cfg.Sizes, cfg.Workers
	if sizes == nil {
		sizes = ScatterSizes()
	}
	if workers == nil {
		workers = []int{1}
		if rep.GOMAXPROCS > 1 {
			workers = append(workers, rep.GOMAXPROCS)
		}
	}
	if cfg.Duration <= 0 {
		return rep, fmt.Errorf("bench: scatter: duration %v per row must be positive", cfg.Duration)
	}
	for _, w := range workers {
		if w < 1 {
			return rep, fmt.Errorf("bench: scatter: %d workers", w)
		}
	}
	for _, sz := range sizes {
		s, err := scatter.New(sz.H, sz.W, scatterJ, scatterL)
		if err != nil {
			return rep, err
		}
		if sz.C < 1 {
			return rep, fmt.Errorf("bench: scatter: %d channels", sz.C)
		}
		for _, w := range workers {
			if cfg.Progress != nil {
				cfg.Progress(fmt.Sprintf("transform: %s %d×%d×%d, %d worker(s), %.3g s", sz.Dataset, sz.C, sz.H, sz.W, w, cfg.Duration.Seconds()))
			}
			row, err := timeTransform(ctx, s, sz, w, cfg.Duration, cfg.Seed)
			if err != nil {
				return rep, err
			}
			rep.Rows = append(rep.Rows, row)
		}
	}
	for _, n := range cfg.Networks {
		if cfg.Progress != nil {
			cfg.Progress("DP-SGD epoch: " + n.Name)
		}
		e, err := timeEpoch(ctx, n, cfg.FeatureDir, cfg.Seed)
		if err != nil {
			return rep, err
		}
		rep.Epochs = append(rep.Epochs, e)
	}
	rep.LoadAvg[1] = LoadAvg()
	return rep, nil
}

// timeTransform runs workers goroutines transforming random images of sz
// for about d (at least one image each) and measures the wall and process
// CPU time.
func timeTransform(ctx context.Context, s *scatter.Scattering, sz ScatterSize, workers int, d time.Duration, seed uint64) (ScatterRow, error) {
	k, oh, ow := s.OutShape()
	in, out := sz.C*sz.H*sz.W, sz.C*k*oh*ow
	rng := rand.New(rand.NewPCG(seed, 1))
	imgs := make([][]float32, 16)
	for i := range imgs {
		imgs[i] = make([]float32, in)
		for j := range imgs[i] {
			imgs[i][j] = rng.Float32()
		}
	}
	// One untimed image warms the transform's pool of work spaces.
	warm := make([]float32, out)
	if err := s.TransformChannels(warm, imgs[0], sz.C); err != nil {
		return ScatterRow{}, err
	}
	counts := make([]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	cpu0 := cpuTime()
	start := time.Now()
	deadline := start.Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := make([]float32, out)
			for i := 0; ; i++ {
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				if err := s.TransformChannels(dst, imgs[(i+w)%len(imgs)], sz.C); err != nil {
					errs[w] = err
					return
				}
				counts[w]++
				if time.Now().After(deadline) {
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed, cpu := time.Since(start).Seconds(), cpuTime()-cpu0
	if err := errors.Join(errs...); err != nil {
		return ScatterRow{}, err
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	row := ScatterRow{Dataset: sz.Dataset, Shape: fmt.Sprintf("%d×%d×%d", sz.C, sz.H, sz.W), Workers: workers, Images: n, Seconds: elapsed,
		ImagesPerS: float64(n) / elapsed, CPUMsPerImage: cpu.Seconds() * 1e3 / float64(n), CacheImages: sz.Images}
	row.CacheSecondsEx = float64(sz.Images) / row.ImagesPerS
	return row, nil
}

// cpuTime is the process's user and system CPU time so far (0 where
// getrusage fails).
func cpuTime() time.Duration {
	t, _ := processCPU()
	return t
}

// errNoBuild stops features.Load when the cache it was given cannot be
// read and it would compute the features instead.
var errNoBuild = errors.New("the feature cache is not usable")

// timeEpoch times one DP-SGD epoch of n on its training set's cached
// features in dir, or says why it cannot.
func timeEpoch(ctx context.Context, n ScatterNetwork, dir string, seed uint64) (ScatterEpoch, error) {
	e := ScatterEpoch{Network: n.Name, Dataset: n.Dataset, BatchSize: n.BatchSize, Epochs: n.Epochs}
	f, ok := n.Arch.FrontEnd()
	switch {
	case n.Err != nil:
		e.Skipped = n.Err.Error()
		return e, nil
	case !ok:
		e.Skipped = "no scatter front end"
		return e, nil
	case dir == "":
		e.Skipped = "no feature cache directory"
		return e, nil
	case n.BatchSize < 1 || n.BatchSize > n.NominalN:
		e.Skipped = fmt.Sprintf("batch size %d is outside [1, %d]", n.BatchSize, n.NominalN)
		return e, nil
	}
	train, err := n.Train()
	if err != nil {
		e.Skipped = err.Error()
		return e, nil
	}
	p := features.Path(dir, f, train)
	if _, err := os.Stat(p); err != nil {
		e.Skipped = fmt.Sprintf("no feature cache %s (dptune train --model %s builds it)", p, n.Name)
		return e, nil
	}
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := func(string) { cancel(errNoBuild) }
	feat, _, err := features.Load(lctx, dir, f, train, func(int, int) { stop("") }, stop)
	if err != nil {
		if ctx.Err() != nil {
			return e, ctx.Err()
		}
		e.Skipped = fmt.Sprintf("feature cache %s: %v", p, context.Cause(lctx))
		return e, nil
	}
	net, err := model.New(n.Arch, randsrc.Seeded(seed, "init"))
	if err != nil {
		return e, err
	}
	e.Parameters = net.NumParams()
	q := float64(n.BatchSize) / float64(n.NominalN)
	c := dpsgd.Config{NoiseMultiplier: 1, ClipNorm: n.ClipNorm, SamplingRate: q, ExpectedBatchSize: float64(n.BatchSize),
		Steps: dpsgd.StepsForEpochs(1, q), LearningRate: n.LearningRate, Momentum: n.Momentum, Seed: &seed, Noise: dpsgd.NoiseSecure}
	res, err := dpsgd.Train(ctx, net, feat, c, nil, nil)
	if err != nil {
		return e, err
	}
	// The steps' own time: a run estimates its data normalisation once,
	// not once an epoch, so that pass is not part of an epoch.
	var steps time.Duration
	for _, d := range res.Timings.Phase {
		steps += d
	}
	e.Seconds = steps.Seconds()
	e.Steps = res.Steps
	e.ExamplesPS = res.MeanBatchSize * float64(res.Steps) / e.Seconds
	e.RunSeconds = float64(n.Epochs) * e.Seconds
	return e, nil
}

// WriteScatter writes rep to dir as scatter.json and the throughput rows
// as scatter.csv (and the epochs, if any, as scatter-epochs.csv), and
// returns the paths written.
func WriteScatter(rep ScatterReport, dir string) ([]string, error) {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return nil, err
	}
	paths := []string{filepath.Join(dir, "scatter.json"), filepath.Join(dir, "scatter.csv")}
	if err := os.WriteFile(paths[0], append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }
	var rows [][]string
	for _, r := range rep.Rows {
		rows = append(rows, []string{r.Dataset, r.Shape, strconv.Itoa(r.Workers), strconv.Itoa(r.Images), f(r.Seconds), f(r.ImagesPerS),
			f(r.CPUMsPerImage), strconv.Itoa(r.CacheImages), f(r.CacheSecondsEx)})
	}
	if err := writeCSV(paths[1], ScatterColumns, rows); err != nil {
		return nil, err
	}
	if len(rep.Epochs) == 0 {
		return paths, nil
	}
	rows = nil
	for _, e := range rep.Epochs {
		rows = append(rows, []string{e.Network, e.Dataset, strconv.Itoa(e.Parameters), strconv.Itoa(e.BatchSize), strconv.Itoa(e.Steps),
			f(e.Seconds), f(e.ExamplesPS), strconv.Itoa(e.Epochs), f(e.RunSeconds), e.Skipped})
	}
	p := filepath.Join(dir, "scatter-epochs.csv")
	if err := writeCSV(p, ScatterEpochColumns, rows); err != nil {
		return nil, err
	}
	return append(paths, p), nil
}

// ScatterColumns and ScatterEpochColumns are the header rows of
// scatter.csv and scatter-epochs.csv.
var (
	ScatterColumns      = []string{"dataset", "shape", "workers", "images", "seconds", "images_per_s", "cpu_ms_per_image", "cache_images", "cache_seconds_estimate"}
	ScatterEpochColumns = []string{"network", "dataset", "parameters", "batch_size", "steps", "seconds", "examples_per_s", "epochs", "run_seconds_estimate", "skipped"}
)
