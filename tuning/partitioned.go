package tuning

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/runner"
)

// PartitionScorer computes the doubling tuner's utilities by subsample and
// aggregate (Ding et al., Algorithm 1, lines 1–11; Nissim, Raskhodnikova,
// Smith 2007): every candidate is trained on each of k disjoint parts of the
// training data and scored on the validation set; u_s is the mean over the
// parts, whose sensitivity to one training example is 1/k (Lemma 2).
//
// Part runs are non-private by default — per-example clipping at the
// candidate's norm but no noise, the paper's point being that only the final
// run must be DP — or DP-SGD with NoiseMultiplier when Private. The k·|S|
// runs go to a pool of one worker per core; each finished (candidate, part)
// score is appended to Cache at once, and a rerun with the same settings
// reuses it, so an interrupted scoring phase resumes where it stopped.
//
// Sizes are nominal (public): each part run samples at SamplingRate, the
// expected batch size BatchSize over the part's declared size, and divides
// its noisy sum by BatchSize; a score is correct predictions over ValSize,
// the declared validation size (capped at 1), never over a count of the
// private data.
type PartitionScorer struct {
	Arch model.Arch
	// Networks are the resolved choices of the space's Network dimension.
	Networks     map[string]model.Arch
	Parts        []*data.Dataset
	Val          *data.Dataset
	ValSize      int // nominal validation size, the scores' divisor
	Epochs       int
	BatchSize    int     // expected batch size of a part run
	SamplingRate float64 // nominal sampling rate of a part run: BatchSize / nominal part size
	Momentum     float64
	// LearningRate, ClipNorm and Schedule are a part run's where the
	// candidate gives none.
	LearningRate, ClipNorm float64
	Schedule               dpsgd.Schedule
	Clipping               dpsgd.Clipping // every part run's rule, as DPSGDTrainer's (automatic: ClipNorm 1, no ClipNorm dimension)
	AutoClipGamma          float64        // automatic clipping's stability constant γ
	Private                bool
	NoiseMultiplier        float64         // when Private
	Noise                  dpsgd.NoiseMode // how a private part run draws its noise (NoiseAuto: fast, the runs are seeded)
	Seed                   uint64
	// Key, if not nil, is the part runs' secret 256-bit key, taking
	// precedence over Seed: the run of candidate c on part j draws
	// everything from Key.Derive("candidate c part j").
	Key *randsrc.Key
	// SplitID identifies the partition (e.g. a digest of its key); a cache
	// written for another partition is refused.
	SplitID string
	// Invocation, if not "", names the tuning the scorer serves
	// (Spec.Invocation): the search a resumed tuning's earlier process
	// recorded in Cache is its own, not an earlier one (Searches,
	// RecordSearch).
	Invocation string
	// Cache is a file of finished (candidate, part) scores: NOT PRIVATE
	// (every candidate's per-part accuracy), written with mode 0600 for the
	// curator; "" for none. Its first line is a header holding a SHA-256
	// digest of the settings and space (a cache of other settings is
	// refused), then one line per score ("cand,part,accuracy") and per
	// search served (see RecordSearch); every line is at most 4096 bytes and
	// written whole by one write call. A partial last line (a killed write)
	// is discarded with a warning and cut off before the next append; any
	// other malformed line is an error naming the file and line.
	Cache string
	// Progress, if not nil, is called after each run with runs done and
	// runs in all (from any goroutine, one call at a time).
	Progress func(done, total int)
	// Warn, if not nil, receives warnings about the cache (e.g. a discarded
	// partial line), one call at a time; nil drops them.
	Warn func(msg string)

	// Runner, if not nil, runs the part runs as the jobs Task describes
	// (each job's output is the run's accuracy in JSON; TrainPart computes
	// it); nil: the pool in this process.
	Runner runner.Runner
	Task   func(c Candidate, part int) (runner.Task, error)

	// Default, if not nil, is one more candidate beside the space's, at
	// index Space.Size() (DefaultCandidate), scored as any other.
	Default *Candidate

	header string // the cache header of the last Scores call
	cands  int    // its number of candidates
}

// Scores returns u_s for every candidate of s (index order; then Default,
// if any), and the per-part scores [candidate][part], each a validation
// accuracy in [0, 1].
// s must pass CheckDPSGDSpace; a candidate without a learning rate or
// clipping norm takes the scorer's. It returns an error for a malformed or foreign cache, a failed
// run, or ctx's error when cancelled (the finished scores stay cached).
func (p *PartitionScorer) Scores(ctx context.Context, s Space) ([]float64, [][]float64, error) {
	k := len(p.Parts)
	if k == 0 || p.Val == nil || p.Val.N == 0 || p.ValSize < 1 || p.BatchSize < 1 || dpsgd.CheckEpochs(p.Epochs, p.SamplingRate) != nil {
		return nil, nil, fmt.Errorf("tuning: partition scorer needs parts, validation data and its nominal size, epochs, a batch size and a sampling rate in (0, 1]")
	}
	for _, part := range p.Parts {
		if part == nil || part.N == 0 {
			return nil, nil, fmt.Errorf("tuning: partition scorer has an empty part")
		}
	}
	if err := CheckDPSGDSpace(s); err != nil {
		return nil, nil, err
	}
	for name, v := range map[string]float64{LearningRate: p.LearningRate, ClipNorm: p.ClipNorm} {
		if !slices.ContainsFunc(s.Dims, func(d Dim) bool { return d.Name == name }) && !(v > 0) {
			return nil, nil, fmt.Errorf("tuning: search space %s has no dimension %q and the partition scorer no value of its own", s.Name, name)
		}
	}
	n := p.candidates(s)
	fp := p.fingerprint(s)
	per, have, err := p.readCache(fp, n)
	if err != nil {
		return nil, nil, err
	}
	var tasks []task
	done := 0
	for i := 0; i < n; i++ {
		for j := 0; j < k; j++ {
			if have[i][j] {
				done++
			} else {
				tasks = append(tasks, task{i, j})
			}
		}
	}
	total := n * k
	// Every part run scores on p.Val: a first group norm normalises it once
	// for them all, in this process.
	if len(tasks) > 0 {
		release, err := dpsgd.HoldInputs(ctx, p.Arch, p.Val.X, p.Val.N)
		if err != nil {
			return nil, nil, err
		}
		defer release()
	}
	var mu sync.Mutex
	record := func(t task, acc float64) error {
		mu.Lock()
		defer mu.Unlock()
		per[t.cand][t.part] = acc
		if err := p.appendCache(fp, strconv.Itoa(t.cand)+","+strconv.Itoa(t.part)+","+fmtFloat(acc)); err != nil {
			return err
		}
		done++
		if p.Progress != nil {
			p.Progress(done, total)
		}
		return nil
	}
	if p.Runner != nil {
		if p.Task == nil {
			return nil, nil, fmt.Errorf("tuning: a runner needs the part runs' jobs")
		}
		jobs := make([]runner.Task, len(tasks))
		for q, t := range tasks {
			if jobs[q], err = p.Task(p.at(s, t.cand), t.part); err != nil {
				return nil, nil, err
			}
		}
		err := p.Runner.Run(ctx, jobs, func(q int, out []byte) error {
			var acc float64
			if err := json.Unmarshal(out, &acc); err != nil || !(acc >= 0 && acc <= 1) {
				return fmt.Errorf("tuning: %s: malformed output %.40q", jobs[q].ID, out)
			}
			return record(tasks[q], acc)
		})
		if err != nil {
			return nil, nil, err
		}
	} else if err := p.pool(ctx, s, tasks, record); err != nil {
		return nil, nil, err
	}
	u := make([]float64, n)
	for i := range per {
		for _, a := range per[i] {
			u[i] += a / float64(k)
		}
	}
	p.header, p.cands = fp, n
	return u, per, nil
}

// candidates is the number of candidates scored: s's and Default.
func (p *PartitionScorer) candidates(s Space) int {
	if p.Default != nil {
		return s.Size() + 1
	}
	return s.Size()
}

// at is candidate i: s's, or Default at index s.Size().
func (p *PartitionScorer) at(s Space, i int) Candidate {
	return Config{Space: s, Default: p.Default}.at(i)
}

// task is one part run: candidate cand on part part.
type task struct{ cand, part int }

// pool runs the tasks in this process, one per core (runner.ForEach).
func (p *PartitionScorer) pool(ctx context.Context, s Space, tasks []task, record func(task, float64) error) error {
	return runner.ForEach(ctx, 0, len(tasks), func(ctx context.Context, q int) error {
		acc, err := p.TrainPart(ctx, p.at(s, tasks[q].cand), tasks[q].part)
		if err != nil {
			return err
		}
		return record(tasks[q], acc)
	})
}

// TrainPart runs candidate c on part j and returns its validation accuracy;
// a diverged run scores 0. It is what a runner's part-run job does.
func (p *PartitionScorer) TrainPart(ctx context.Context, c Candidate, j int) (float64, error) {
	if j < 0 || j >= len(p.Parts) {
		return 0, fmt.Errorf("tuning: part %d is outside [0, %d)", j, len(p.Parts))
	}
	part := p.Parts[j]
	seed := p.Seed ^ uint64(c.Index*1_000_003+j)*0x9e3779b97f4a7c15
	var key *randsrc.Key
	if p.Key != nil {
		key = p.Key.Derive(fmt.Sprintf("candidate %d part %d", c.Index, j))
	}
	// A part run takes the candidate's network, learning rate, clipping
	// norm, momentum and schedule; its batch size and epochs are the
	// scorer's, for a part of 1/k of the data.
	q := p.SamplingRate
	h := Hyper{Arch: p.Arch, Networks: p.Networks, Config: dpsgd.Config{SamplingRate: q, ExpectedBatchSize: float64(p.BatchSize),
		Steps: dpsgd.StepsForEpochs(p.Epochs, q), Momentum: p.Momentum, LearningRate: p.LearningRate, ClipNorm: p.ClipNorm, Schedule: p.Schedule,
		Clipping: p.Clipping, AutoClipGamma: p.AutoClipGamma}}
	pc := Candidate{Index: c.Index, Values: maps.Clone(c.Values), Labels: c.Labels}
	delete(pc.Values, BatchSize)
	delete(pc.Values, Epochs)
	arch, cfg, err := h.Run(pc)
	if err != nil {
		return 0, err
	}
	if st := dpsgd.Stages(arch); p.Private && len(st) > 0 {
		// Its estimate would spend privacy the search's ledger does not
		// count (job refuses such a tuning before any data is read).
		return 0, fmt.Errorf("tuning: a private part run does not take network %s: its %s layer spends privacy before training", arch.Name, st[0].Type)
	}
	cfg.Seed, cfg.Key = &seed, key
	net, err := model.New(arch, randsrc.For(&seed, key, "init"))
	if err != nil {
		return 0, err
	}
	if key != nil {
		cfg.Seed = nil
	}
	if p.Private {
		cfg.NoiseMultiplier, cfg.Noise = p.NoiseMultiplier, p.Noise
	} else {
		cfg.NonPrivate = true
	}
	if _, err := dpsgd.Train(ctx, net, part, cfg, nil, stepHeartbeat(ctx)); err != nil {
		if errors.Is(err, dpsgd.ErrDiverged) {
			return 0, nil
		}
		return 0, err
	}
	m, err := dpsgd.Evaluate(ctx, net, p.Val.X, p.Val.Y)
	return min(1, float64(m.Correct)/float64(p.ValSize)), err
}
