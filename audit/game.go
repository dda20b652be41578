package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/runner"
)

// Protocol is the private protocol under audit together with the
// adversary's statistic (Xiang et al., Algorithm 1, lines 2–4).
type Protocol interface {
	// Trial runs the private protocol once on X (b = 0) or X′ (b = 1),
	// drawing all its randomness from rng, and returns the adversary's
	// statistic on what the protocol released (larger means "more likely
	// X′"; ±Inf allowed, NaN refused by Run). It should stop soon after ctx
	// is cancelled and must then return an error, not a statistic.
	Trial(ctx context.Context, b int, rng *rand.Rand) (float64, error)
}

// MaxTrials is the largest number of trials Run plays: it keeps about 26
// bytes per trial in memory (statistic, coin, bookkeeping and the two
// sorted halves EpsilonLower reads), about 2.6 GB at this bound, 26 times
// the 10⁶ trials Xiang et al. play (Section 5.4).
const MaxTrials = 100_000_000

// Config configures Run.
type Config struct {
	// Trials is the number of games to play, in [1, MaxTrials].
	Trials int
	// Seed fixes every trial's coin and random stream (Run).
	Seed uint64
	// Workers is the number of trials run at once; 0 means one per core
	// (runner.ForEach).
	Workers int
	// CSV, when not "", is a file the results stream to (see Run); "" keeps
	// them in memory only.
	CSV string
	// Protocol describes the protocol p completely — its kind and every
	// parameter that changes its trials — as readable key=value fields that
	// the CSV's header records and a resume must match (see Run and Param).
	Protocol []Param
	// Progress, when not nil, is called with the number of finished trials
	// (those resumed from CSV included) and Trials: once before the first
	// trial and after each one. It is called from any goroutine, one call at
	// a time, and holds up the other workers while it runs.
	Progress func(done, total int)
	// Runner, if not nil, plays the trials in blocks of Block (default 50)
	// as the jobs Task describes; each job's output is EncodeStats of
	// Trials(ctx, p, Seed, block). Nil: Workers goroutines in this process.
	Runner runner.Runner
	Task   func(trials []int) (runner.Task, error)
	Block  int
}

// Trials plays the given trials of the game (Run's streams: trial i's coin
// and randomness come from seed and i alone) and returns their statistics in
// the same order: the job a runner's block of trials does.
func Trials(ctx context.Context, p Protocol, seed uint64, trials []int) ([]float64, error) {
	out := make([]float64, len(trials))
	for k, i := range trials {
		_, s, err := play(ctx, p, seed, i)
		if err != nil {
			return nil, err
		}
		out[k] = s
		runner.Progress(ctx, k+1, len(trials))
	}
	return out, nil
}

// play plays trial i: its coin from seed and i alone, and the statistic;
// it refuses a NaN statistic.
func play(ctx context.Context, p Protocol, seed uint64, i int) (b int, s float64, err error) {
	b, rng := trialStream(seed, i)
	if s, err = p.Trial(ctx, b, rng); err != nil {
		return 0, 0, fmt.Errorf("audit: trial %d: %w", i, err)
	}
	if math.IsNaN(s) {
		return 0, 0, fmt.Errorf("audit: trial %d: the statistic is NaN", i)
	}
	return b, s, nil
}

// EncodeStats writes statistics as JSON strings in Go's shortest
// round-tripping form ("+Inf" and "-Inf" included, which JSON numbers lack).
func EncodeStats(stats []float64) ([]byte, error) {
	s := make([]string, len(stats))
	for i, v := range stats {
		s[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return json.Marshal(s)
}

// DecodeStats reads EncodeStats's output; it refuses NaN and malformed
// input.
func DecodeStats(b []byte) ([]float64, error) {
	var s []string
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("audit: malformed statistics: %w", err)
	}
	out := make([]float64, len(s))
	for i, v := range s {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return nil, fmt.Errorf("audit: malformed statistic %.40q", v)
		}
		out[i] = f
	}
	return out, nil
}

// Run plays the distinguishing game (Xiang et al., Algorithm 1) c.Trials
// times with p and returns the adversary's statistics on the trials whose
// coin was b = 0 (stats0) and b = 1 (stats1), each in increasing trial
// order, ready for EpsilonLower.
//
// Trial i (0-based) draws from its own stream randsrc.Seeded(c.Seed,
// "audit trial i"): the coin b is the top bit of the stream's first
// Uint64, and the same stream, continued, is handed to p.Trial. A run is
// therefore reproducible from c.Seed whatever the number of workers and the
// order trials finish in, and a resumed run gives the same statistics as an
// uninterrupted one (for a protocol whose randomness all comes from rng).
//
// With c.CSV set, the file starts with the header
//
//	# dptune audit v2
//	# <key>=<value>          one line per field of c.Protocol, in order
//	# seed=<Seed>
//	# trials=<Trials>
//	# digest=sha256:<hex>    SHA-256 of the lines above, each with its newline
//	trial,b,stat
//
// and gets one "i,b,stat" line per finished trial, in the order trials
// finish, each written whole with a single write (stat in Go's shortest
// round-tripping form, ±Inf as "+Inf"/"-Inf"). If the file exists, Run
// resumes from it: it keeps the trials already there and plays only the
// others. A partial last line (a write cut short) is discarded and the
// file truncated before it. The header binds the trials to their audit: a
// file whose fields differ from c's in any way — protocol, a parameter,
// the seed or the trial count, which therefore can never change on resume
// (growing it after seeing results would be optional stopping, voiding the
// stated confidence) — whose digest does not match its fields, or that was
// written by an earlier version without the protocol's fields, is refused
// with an error wrapping ErrOtherAudit that names the file and the first
// differing field; a file that is not an audit CSV, or whose lines are
// malformed, duplicated or disagree with the seed's coins, is refused with
// an error naming the file. CheckCSV makes the header's checks without
// playing.
//
// When ctx is cancelled, Run stops (the running trials stop through their
// ctx) and returns ctx's error; the trials that finished are in the CSV. It
// returns an error when p is nil, c.Trials is outside [1, MaxTrials],
// c.Workers < 0, c.Protocol cannot be recorded (checkParams), a trial
// returns an error (naming the trial) or a NaN statistic, or the CSV cannot
// be read or written.
func Run(ctx context.Context, p Protocol, c Config) (stats0, stats1 []float64, err error) {
	if p == nil {
		return nil, nil, errors.New("audit: no protocol to audit")
	}
	if c.Trials < 1 || c.Trials > MaxTrials {
		return nil, nil, fmt.Errorf("audit: the number of trials %d is outside [1, %d]", c.Trials, MaxTrials)
	}
	if err := checkParams(c.Protocol); err != nil {
		return nil, nil, err
	}
	if c.Workers < 0 {
		return nil, nil, fmt.Errorf("audit: the number of workers must be ≥ 0 (0: one per core), have %d", c.Workers)
	}
	n := c.Trials
	stat := make([]float64, n)
	coin := make([]int8, n)
	have := make([]bool, n)

	var out *csvFile
	if c.CSV != "" {
		var recs []record
		out, recs, err = openCSV(c)
		if err != nil {
			return nil, nil, err
		}
		defer func() {
			if cerr := out.f.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("audit: closing %s: %w", c.CSV, cerr)
			}
		}()
		for _, r := range recs {
			if b, _ := trialStream(c.Seed, r.trial); b != r.b {
				return nil, nil, fmt.Errorf("audit: %s line for trial %d has b = %d, but seed %d gives b = %d: the file belongs to another audit", c.CSV, r.trial, r.b, c.Seed, b)
			}
			stat[r.trial], coin[r.trial], have[r.trial] = r.stat, int8(r.b), true
		}
	}
	todo := make([]int, 0, n)
	for i, h := range have {
		if !h {
			todo = append(todo, i)
		}
	}
	done := n - len(todo)
	if c.Progress != nil {
		c.Progress(done, n)
	}

	var (
		mu   sync.Mutex // guards done, the CSV and Progress
		line []byte
	)
	keep := func(i, b int, s float64) error {
		mu.Lock()
		defer mu.Unlock()
		stat[i], coin[i] = s, int8(b)
		if out != nil {
			line = appendRecord(line[:0], record{trial: i, b: b, stat: s})
			if _, err := out.f.Write(line); err != nil {
				return fmt.Errorf("audit: writing %s: %w", c.CSV, err)
			}
		}
		done++
		if c.Progress != nil {
			c.Progress(done, n)
		}
		return nil
	}
	if c.Runner != nil {
		err = c.runBlocks(ctx, todo, func(i int, s float64) error {
			b, _ := trialStream(c.Seed, i)
			return keep(i, b, s)
		})
	} else {
		err = runner.ForEach(ctx, c.Workers, len(todo), func(ctx context.Context, j int) error {
			b, s, err := play(ctx, p, c.Seed, todo[j])
			if err != nil {
				return err
			}
			return keep(todo[j], b, s)
		})
	}
	if err != nil {
		return nil, nil, err
	}
	return split(stat, coin)
}

// split sorts the statistics by coin, in trial order.
func split(stat []float64, coin []int8) (stats0, stats1 []float64, err error) {
	for i := range stat {
		if coin[i] == 0 {
			stats0 = append(stats0, stat[i])
		} else {
			stats1 = append(stats1, stat[i])
		}
	}
	return stats0, stats1, nil
}

// runBlocks plays the trials todo through c.Runner in blocks of c.Block,
// calling record for each trial as its block finishes.
func (c Config) runBlocks(ctx context.Context, todo []int, record func(i int, s float64) error) error {
	if c.Task == nil {
		return errors.New("audit: a runner needs the trials' jobs")
	}
	size := c.Block
	if size <= 0 {
		size = 50
	}
	var blocks [][]int
	var tasks []runner.Task
	for lo := 0; lo < len(todo); lo += size {
		b := todo[lo:min(lo+size, len(todo))]
		t, err := c.Task(b)
		if err != nil {
			return err
		}
		blocks, tasks = append(blocks, b), append(tasks, t)
	}
	return c.Runner.Run(ctx, tasks, func(k int, out []byte) error {
		stats, err := DecodeStats(out)
		if err != nil {
			return err
		}
		if len(stats) != len(blocks[k]) {
			return fmt.Errorf("audit: %s returned %d statistics for %d trials", tasks[k].ID, len(stats), len(blocks[k]))
		}
		for j, i := range blocks[k] {
			if err := record(i, stats[j]); err != nil {
				return err
			}
		}
		return nil
	})
}

// trialStream returns trial i's coin and its random stream, positioned
// after the coin's draw.
func trialStream(seed uint64, i int) (int, *rand.Rand) {
	rng := randsrc.Seeded(seed, "audit trial "+strconv.Itoa(i))
	return int(rng.Uint64() >> 63), rng
}
