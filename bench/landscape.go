package bench

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// Landscape is the test accuracy of real DP-SGD runs at each candidate of a
// (sub)grid, for one noise multiplier: the "actual accuracy" of DP-HyPO's
// semi-real simulation (Section 4.2.1, Appendix E.1).
type Landscape struct {
	Space           tuning.Space
	NoiseMultiplier float64
	Mean, SD        []float64 // per candidate, over the seeds
	N               []int     // runs per candidate
}

// LandscapeConfig says how to build a landscape.
type LandscapeConfig struct {
	Arch            model.Arch
	Train, Test     *data.Dataset
	Space           tuning.Space // usually a subgrid of a builtin space (Subgrid)
	NoiseMultiplier float64
	SamplingRate    float64
	Epochs, Seeds   int
	Cache           string // CSV file: read if it exists, appended to as runs finish
	// Progress, if not nil, is called after each run with the runs done and
	// the runs needed.
	Progress func(done, total int)
}

// Subgrid keeps every stride-th value of each dimension of s (strides[k] for
// dimension k), always including the first value.
func Subgrid(s tuning.Space, strides []int) tuning.Space {
	out := tuning.Space{Name: s.Name + "-sub"}
	for k, d := range s.Dims {
		st := 1
		if k < len(strides) && strides[k] > 1 {
			st = strides[k]
		}
		nd := tuning.Dim{Name: d.Name, Log: d.Log}
		for i := 0; i < len(d.Values); i += st {
			nd.Values = append(nd.Values, d.Values[i])
		}
		out.Dims = append(out.Dims, nd)
	}
	return out
}

// BuildLandscape trains cfg.Seeds DP-SGD runs of cfg.Epochs epochs per
// candidate and records their test accuracies. Runs already in the cache
// (same σ, candidate and seed) are reused, and each finished run is appended
// to it at once, so an interrupted build loses nothing.
func BuildLandscape(ctx context.Context, cfg LandscapeConfig) (Landscape, error) {
	n := cfg.Space.Size()
	acc := make([][]float64, n)
	done := map[[2]int]bool{}
	key := func(c tuning.Candidate) (int, bool) {
		for i := 0; i < n; i++ {
			d := cfg.Space.At(i)
			if approx(d.Values[tuning.LearningRate], c.Values[tuning.LearningRate]) && approx(d.Values[tuning.ClipNorm], c.Values[tuning.ClipNorm]) {
				return i, true
			}
		}
		return 0, false
	}
	rows, err := readCache(cfg.Cache)
	if err != nil {
		return Landscape{}, err
	}
	for _, r := range rows {
		if !approx(r.sigma, cfg.NoiseMultiplier) || r.epochs != cfg.Epochs || r.seed >= cfg.Seeds {
			continue
		}
		if i, ok := key(tuning.Candidate{Values: map[string]float64{tuning.LearningRate: r.lr, tuning.ClipNorm: r.clip}}); ok && !done[[2]int{i, r.seed}] {
			done[[2]int{i, r.seed}] = true
			acc[i] = append(acc[i], r.accuracy)
		}
	}
	total, finished := n*cfg.Seeds, len(done)
	for i := 0; i < n; i++ {
		c := cfg.Space.At(i)
		for s := 0; s < cfg.Seeds; s++ {
			if done[[2]int{i, s}] {
				continue
			}
			if err := ctx.Err(); err != nil {
				return Landscape{}, err
			}
			seed := uint64(1000*s + i)
			t := &tuning.DPSGDTrainer{Arch: cfg.Arch, Data: cfg.Train, Val: cfg.Test, NoiseMultiplier: cfg.NoiseMultiplier,
				SamplingRate: cfg.SamplingRate, ExpectedBatchSize: cfg.SamplingRate * float64(cfg.Train.N),
				Steps: dpsgd.StepsForEpochs(cfg.Epochs, cfg.SamplingRate)}
			r, err := t.Train(ctx, c, &seed)
			if err != nil {
				return Landscape{}, err
			}
			score := r.Score
			if r.Failed {
				score = 0 // a diverged run: the landscape records it as accuracy 0
			}
			acc[i] = append(acc[i], score)
			if err := appendCache(cfg.Cache, cacheRow{cfg.NoiseMultiplier, cfg.Epochs, s, c.Values[tuning.LearningRate], c.Values[tuning.ClipNorm], score}); err != nil {
				return Landscape{}, err
			}
			finished++
			if cfg.Progress != nil {
				cfg.Progress(finished, total)
			}
		}
	}
	l := Landscape{Space: cfg.Space, NoiseMultiplier: cfg.NoiseMultiplier, Mean: make([]float64, n), SD: make([]float64, n), N: make([]int, n)}
	for i, a := range acc {
		var m, v float64
		for _, x := range a {
			m += x / float64(len(a))
		}
		for _, x := range a {
			v += (x - m) * (x - m)
		}
		if len(a) > 1 {
			v /= float64(len(a) - 1)
		}
		l.Mean[i], l.SD[i], l.N[i] = m, math.Sqrt(v), len(a)
	}
	return l, nil
}

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

type cacheRow struct {
	sigma        float64
	epochs, seed int
	lr, clip     float64
	accuracy     float64
}

var cacheHeader = []string{"noise_multiplier", "epochs", "seed", "learning_rate", "clip_norm", "test_accuracy"}

func readCache(path string) ([]cacheRow, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("landscape cache %s: %w", path, err)
	}
	var rows []cacheRow
	for k, r := range recs {
		if k == 0 {
			continue // header
		}
		if len(r) != len(cacheHeader) {
			return nil, fmt.Errorf("landscape cache %s, line %d: %d fields, want %d", path, k+1, len(r), len(cacheHeader))
		}
		var row cacheRow
		var errs [6]error
		row.sigma, errs[0] = strconv.ParseFloat(r[0], 64)
		row.epochs, errs[1] = strconv.Atoi(r[1])
		row.seed, errs[2] = strconv.Atoi(r[2])
		row.lr, errs[3] = strconv.ParseFloat(r[3], 64)
		row.clip, errs[4] = strconv.ParseFloat(r[4], 64)
		row.accuracy, errs[5] = strconv.ParseFloat(r[5], 64)
		if err := errors.Join(errs[:]...); err != nil {
			return nil, fmt.Errorf("landscape cache %s, line %d: %w", path, k+1, err)
		}
		rows = append(rows, row)
	}
	return rows, nil
}

func appendCache(path string, r cacheRow) error {
	if path == "" {
		return nil
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	if errors.Is(statErr, fs.ErrNotExist) {
		w.Write(cacheHeader)
	}
	w.Write([]string{strconv.FormatFloat(r.sigma, 'g', -1, 64), strconv.Itoa(r.epochs), strconv.Itoa(r.seed),
		strconv.FormatFloat(r.lr, 'g', -1, 64), strconv.FormatFloat(r.clip, 'g', -1, 64), strconv.FormatFloat(r.accuracy, 'g', -1, 64)})
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
