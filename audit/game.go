package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/dptune/dptune/internal/randsrc"
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

// Config configures Run.
type Config struct {
	// Trials is the number of games to play, at least 1.
	Trials int
	// Seed fixes every trial's coin and random stream (Run).
	Seed uint64
	// Workers is the number of trials run at once; 0 means GOMAXPROCS.
	Workers int
	// CSV, when not "", is a file the results stream to (see Run); "" keeps
	// them in memory only.
	CSV string
	// Progress, when not nil, is called with the number of finished trials
	// (those resumed from CSV included) and Trials: once before the first
	// trial and after each one. It is called from any goroutine, one call at
	// a time, and holds up the other workers while it runs.
	Progress func(done, total int)
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
// With c.CSV set, the file starts with the two header lines
//
//	# dptune audit seed=<Seed> trials=<Trials>
//	trial,b,stat
//
// and gets one "i,b,stat" line per finished trial, in the order trials
// finish, each written whole with a single write (stat in Go's shortest
// round-tripping form, ±Inf as "+Inf"/"-Inf"). If the file exists, Run
// resumes from it: it keeps the trials already there and plays only the
// others. A partial last line (a write cut short) is discarded and the
// file truncated before it. The trial count may grow on resume (the header
// is rewritten with the new count); a file whose header names another seed
// or more trials, that is not an audit CSV, or whose lines are malformed,
// duplicated or disagree with the seed's coins, is refused with an error
// naming the file.
//
// When ctx is cancelled, Run stops (the running trials stop through their
// ctx) and returns ctx's error; the trials that finished are in the CSV. It
// returns an error when p is nil, c.Trials < 1, c.Workers < 0, a trial
// returns an error (naming the trial) or a NaN statistic, or the CSV cannot
// be read or written.
func Run(ctx context.Context, p Protocol, c Config) (stats0, stats1 []float64, err error) {
	if p == nil {
		return nil, nil, errors.New("audit: no protocol to audit")
	}
	if c.Trials < 1 {
		return nil, nil, fmt.Errorf("audit: need at least 1 trial, have %d", c.Trials)
	}
	if c.Workers < 0 {
		return nil, nil, fmt.Errorf("audit: the number of workers must be ≥ 0 (0: GOMAXPROCS), have %d", c.Workers)
	}
	n := c.Trials
	stat := make([]float64, n)
	coin := make([]int8, n)
	have := make([]bool, n)

	var out *csvFile
	if c.CSV != "" {
		var recs []record
		out, recs, err = openCSV(c.CSV, c.Seed, n)
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

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex // guards done, the CSV and Progress
		next     atomic.Int64
		failOnce sync.Once
		failErr  error
		wg       sync.WaitGroup
	)
	fail := func(e error) {
		failOnce.Do(func() { failErr = e; cancel() })
	}
	workers := c.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(todo))
	for range workers {
		wg.Go(func() {
			var line []byte
			for {
				j := int(next.Add(1)) - 1
				if j >= len(todo) || runCtx.Err() != nil {
					return
				}
				i := todo[j]
				b, rng := trialStream(c.Seed, i)
				s, err := p.Trial(runCtx, b, rng)
				if err != nil {
					if runCtx.Err() == nil {
						fail(fmt.Errorf("audit: trial %d: %w", i, err))
					}
					return
				}
				if math.IsNaN(s) {
					fail(fmt.Errorf("audit: trial %d: the statistic is NaN", i))
					return
				}
				stat[i], coin[i] = s, int8(b)
				mu.Lock()
				if out != nil {
					line = appendRecord(line[:0], record{trial: i, b: b, stat: s})
					if _, err := out.f.Write(line); err != nil {
						mu.Unlock()
						fail(fmt.Errorf("audit: writing %s: %w", c.CSV, err))
						return
					}
				}
				done++
				if c.Progress != nil {
					c.Progress(done, n)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if failErr != nil {
		return nil, nil, failErr
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	for i := range n {
		if coin[i] == 0 {
			stats0 = append(stats0, stat[i])
		} else {
			stats1 = append(stats1, stat[i])
		}
	}
	return stats0, stats1, nil
}

// trialStream returns trial i's coin and its random stream, positioned
// after the coin's draw.
func trialStream(seed uint64, i int) (int, *rand.Rand) {
	rng := randsrc.Seeded(seed, "audit trial "+strconv.Itoa(i))
	return int(rng.Uint64() >> 63), rng
}
