package bench

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// Landscape is the test accuracy of real DP-SGD runs at each candidate of a
// (sub)grid, for one noise multiplier: the "actual accuracy" of DP-HyPO's
// semi-real simulation (Section 4.2.1, Appendix E.1).
type Landscape struct {
	Space           tuning.Space
	Network         string // NetworkKey of the network trained
	NoiseMultiplier float64
	Mean, SD        []float64 // per candidate, over the seeds
	N               []int     // runs per candidate
	// Seconds is the wall time the landscape's runs took, summed over every
	// build that added to its cache (runs cached without a time, by an
	// older dptune, count none).
	Seconds float64
}

// LandscapeConfig says how to build a landscape.
type LandscapeConfig struct {
	Arch            model.Arch // the network trained; the cache keeps its NetworkKey
	Train, Test     *data.Dataset
	Space           tuning.Space // usually a subgrid of a builtin space (Subgrid)
	NoiseMultiplier float64
	SamplingRate    float64
	Epochs, Seeds   int
	// Cache is a CSV file: read if it exists, appended to as runs finish.
	// Its rows name their network, σ, epochs, seed and candidate; a build
	// reuses only the rows that match its own.
	Cache string
	// Progress, if not nil, is called after each run with the runs done and
	// the runs needed.
	Progress func(done, total int)
	// Runner, if not nil, runs the landscape's runs as the jobs that Jobs
	// makes for the landscape's trainer (job.LandscapeJobs); nil: one after
	// another in this process.
	Runner runner.Runner
	Jobs   func(*tuning.DPSGDTrainer) tuning.Jobs
}

// Subgrid keeps every stride-th value of each dimension of s
// (strides[name], 1 for a dimension not named), always including the first
// value; a categorical dimension keeps the same choices, renumbered.
func Subgrid(s tuning.Space, strides map[string]int) tuning.Space {
	out := tuning.Space{Name: s.Name + "-sub"}
	for _, d := range s.Dims {
		st := max(strides[d.Name], 1)
		nd := tuning.Dim{Name: d.Name, Log: d.Log}
		var choices []string
		for i := 0; i < len(d.Values); i += st {
			nd.Values = append(nd.Values, d.Values[i])
			if d.Choices != nil {
				choices = append(choices, d.Choices[i])
			}
		}
		if d.Choices != nil {
			nd = tuning.Categorical(d.Name, choices...)
		}
		out.Dims = append(out.Dims, nd)
	}
	return out
}

// NetworkKey names spec in a landscape cache: its name and the first 12
// hex digits of its JSON's SHA-256, so two specs that share a name but not
// their layers never share runs.
func NetworkKey(spec model.Spec) string {
	b, _ := json.Marshal(spec) // a Spec is plain data: Marshal cannot fail
	h := sha256.Sum256(b)
	return spec.Name + "@" + hex.EncodeToString(h[:6])
}

// BuildLandscape trains cfg.Seeds DP-SGD runs of cfg.Epochs epochs per
// candidate and records their test accuracies. Runs already in the cache
// (same σ, candidate and seed) are reused, and each finished run is appended
// to it at once, so an interrupted build loses nothing.
func BuildLandscape(ctx context.Context, cfg LandscapeConfig) (Landscape, error) {
	n := cfg.Space.Size()
	network := NetworkKey(cfg.Arch.Spec)
	var seconds float64
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
	// got[i][s] is seed s's accuracy at candidate i, in seed order
	// whatever order the runs finish in.
	got := make([][]float64, n)
	have := make([][]bool, n)
	for i := range got {
		got[i], have[i] = make([]float64, cfg.Seeds), make([]bool, cfg.Seeds)
	}
	for _, r := range rows {
		if r.network != network || !approx(r.sigma, cfg.NoiseMultiplier) || r.epochs != cfg.Epochs || r.seed >= cfg.Seeds {
			continue
		}
		if i, ok := key(tuning.Candidate{Values: map[string]float64{tuning.LearningRate: r.lr, tuning.ClipNorm: r.clip}}); ok && !have[i][r.seed] {
			got[i][r.seed], have[i][r.seed] = r.accuracy, true
			done[[2]int{i, r.seed}] = true
			if !math.IsNaN(r.seconds) {
				seconds += r.seconds
			}
		}
	}
	total, finished := n*cfg.Seeds, len(done)
	t := &tuning.DPSGDTrainer{Arch: cfg.Arch, Data: cfg.Train, Val: cfg.Test, NoiseMultiplier: cfg.NoiseMultiplier,
		SamplingRate: cfg.SamplingRate, Steps: dpsgd.StepsForEpochs(cfg.Epochs, cfg.SamplingRate)}
	if cfg.Train != nil {
		t.ExpectedBatchSize = cfg.SamplingRate * float64(cfg.Train.N)
	}
	var todo [][2]int
	for i := 0; i < n; i++ {
		for s := 0; s < cfg.Seeds; s++ {
			if !done[[2]int{i, s}] {
				todo = append(todo, [2]int{i, s})
			}
		}
	}
	// Each run's time is the wall time since the previous one finished
	// (or the build began): with parallel runs they still sum to the
	// build's wall time.
	last := time.Now()
	record := func(p [2]int, r tuning.Run) error {
		score := r.Score
		if r.Failed {
			score = 0 // a diverged run: the landscape records it as accuracy 0
		}
		got[p[0]][p[1]], have[p[0]][p[1]] = score, true
		now := time.Now()
		dt := now.Sub(last).Seconds()
		last, seconds = now, seconds+dt
		c := cfg.Space.At(p[0])
		if err := appendCache(cfg.Cache, cacheRow{network, cfg.NoiseMultiplier, cfg.Epochs, p[1], c.Values[tuning.LearningRate], c.Values[tuning.ClipNorm], score, dt}); err != nil {
			return err
		}
		finished++
		if cfg.Progress != nil {
			cfg.Progress(finished, total)
		}
		return nil
	}
	seedOf := func(p [2]int) *uint64 { v := uint64(1000*p[1] + p[0]); return &v }
	if cfg.Runner != nil {
		if cfg.Jobs == nil {
			return Landscape{}, errors.New("bench: a runner needs the landscape's jobs")
		}
		tasks := make([]runner.Task, len(todo))
		for k, p := range todo {
			if tasks[k], err = cfg.Jobs(t).Task(fmt.Sprintf("σ %g candidate %d seed %d", cfg.NoiseMultiplier, p[0], p[1]), cfg.Space.At(p[0]), seedOf(p), nil); err != nil {
				return Landscape{}, err
			}
		}
		if err := cfg.Runner.Run(ctx, tasks, func(k int, out []byte) error {
			r, err := cfg.Jobs(t).Decode(cfg.Space.At(todo[k][0]), out)
			if err != nil {
				return err
			}
			return record(todo[k], r)
		}); err != nil {
			return Landscape{}, err
		}
	} else {
		for _, p := range todo {
			if err := ctx.Err(); err != nil {
				return Landscape{}, err
			}
			r, err := t.Train(ctx, cfg.Space.At(p[0]), seedOf(p))
			if err != nil {
				return Landscape{}, err
			}
			if err := record(p, r); err != nil {
				return Landscape{}, err
			}
		}
	}
	acc := make([][]float64, n)
	for i := range got {
		for s, ok := range have[i] {
			if ok {
				acc[i] = append(acc[i], got[i][s])
			}
		}
	}
	l := Landscape{Space: cfg.Space, Network: network, NoiseMultiplier: cfg.NoiseMultiplier, Seconds: seconds,
		Mean: make([]float64, n), SD: make([]float64, n), N: make([]int, n)}
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
	network      string
	sigma        float64
	epochs, seed int
	lr, clip     float64
	accuracy     float64
	seconds      float64 // NaN: not recorded
}

var cacheHeader = []string{"network", "noise_multiplier", "epochs", "seed", "learning_rate", "clip_norm", "test_accuracy", "wall_seconds"}

func readCache(path string) ([]cacheRow, error) {
	if path == "" {
		return nil, nil
	}
	f, err := fsx.Open(path)
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
		row := cacheRow{network: r[0], seconds: math.NaN()}
		var errs [7]error
		row.sigma, errs[0] = strconv.ParseFloat(r[1], 64)
		row.epochs, errs[1] = strconv.Atoi(r[2])
		row.seed, errs[2] = strconv.Atoi(r[3])
		row.lr, errs[3] = strconv.ParseFloat(r[4], 64)
		row.clip, errs[4] = strconv.ParseFloat(r[5], 64)
		row.accuracy, errs[5] = strconv.ParseFloat(r[6], 64)
		if r[7] != "" {
			row.seconds, errs[6] = strconv.ParseFloat(r[7], 64)
		}
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
	sec := ""
	if !math.IsNaN(r.seconds) {
		sec = strconv.FormatFloat(r.seconds, 'f', 3, 64)
	}
	w.Write([]string{r.network, strconv.FormatFloat(r.sigma, 'g', -1, 64), strconv.Itoa(r.epochs), strconv.Itoa(r.seed),
		strconv.FormatFloat(r.lr, 'g', -1, 64), strconv.FormatFloat(r.clip, 'g', -1, 64), strconv.FormatFloat(r.accuracy, 'g', -1, 64), sec})
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
