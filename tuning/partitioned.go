package tuning

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
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
// runs go to a pool of GOMAXPROCS workers; each finished (candidate, part)
// score is appended to Cache at once, and a rerun with the same settings
// reuses it, so an interrupted scoring phase resumes where it stopped.
type PartitionScorer struct {
	Arch            model.Arch
	Parts           []*data.Dataset
	Val             *data.Dataset
	Epochs          int
	BatchSize       int
	Momentum        float64
	Private         bool
	NoiseMultiplier float64 // when Private
	Seed            uint64
	// SplitID identifies the partition (e.g. a digest of its key); a cache
	// written for another partition is refused.
	SplitID string
	// Cache is a file of finished (candidate, part) scores: NOT PRIVATE
	// (every candidate's per-part accuracy), written with mode 0600 for the
	// curator; "" for none.
	Cache string
	// Progress, if not nil, is called after each run with runs done and
	// runs in all (from any goroutine, one call at a time).
	Progress func(done, total int)
}

// fingerprint identifies the settings a cache belongs to.
func (p *PartitionScorer) fingerprint(s Space) string {
	var vals []string
	for _, d := range s.Dims {
		for _, v := range d.Values {
			vals = append(vals, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	sizes := make([]string, len(p.Parts))
	for i, part := range p.Parts {
		sizes[i] = strconv.Itoa(part.N)
	}
	return fmt.Sprintf("# NOT PRIVATE, curator only: dptune partition scores: arch=%s split=%s sizes=%s val=%d epochs=%d batch=%d momentum=%g private=%v sigma=%g seed=%d space=%s",
		p.Arch.Name, p.SplitID, strings.Join(sizes, ","), p.Val.N, p.Epochs, p.BatchSize, p.Momentum, p.Private, p.NoiseMultiplier, p.Seed, strings.Join(vals, ","))
}

// Scores returns u_s for every candidate of s (index order), and the
// per-part scores [candidate][part].
func (p *PartitionScorer) Scores(ctx context.Context, s Space) ([]float64, [][]float64, error) {
	k, n := len(p.Parts), s.Size()
	if k == 0 || p.Val == nil || p.Val.N == 0 || p.Epochs < 1 || p.BatchSize < 1 {
		return nil, nil, fmt.Errorf("tuning: partition scorer needs parts, validation data, epochs and a batch size")
	}
	per := make([][]float64, n)
	have := make([][]bool, n)
	for i := range per {
		per[i], have[i] = make([]float64, k), make([]bool, k)
	}
	fp := p.fingerprint(s)
	if err := p.readCache(fp, per, have); err != nil {
		return nil, nil, err
	}
	type task struct{ cand, part int }
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan task)
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range ch {
				acc, err := p.train(ctx, s.At(t.cand), t.part)
				mu.Lock()
				if err == nil {
					per[t.cand][t.part] = acc
					err = p.appendCache(fp, t.cand, t.part, acc)
					done++
					if p.Progress != nil && err == nil {
						p.Progress(done, total)
					}
				}
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, t := range tasks {
		select {
		case ch <- t:
		case <-ctx.Done():
			break feed
		}
	}
	close(ch)
	wg.Wait()
	if firstErr == nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		return nil, nil, firstErr
	}
	u := make([]float64, n)
	for i := range per {
		for _, a := range per[i] {
			u[i] += a / float64(k)
		}
	}
	return u, per, nil
}

// train runs candidate c on part j and returns its validation accuracy; a
// diverged run scores 0.
func (p *PartitionScorer) train(ctx context.Context, c Candidate, j int) (float64, error) {
	part := p.Parts[j]
	seed := p.Seed ^ uint64(c.Index*1_000_003+j)*0x9e3779b97f4a7c15
	net, err := model.New(p.Arch, randsrc.Seeded(seed, "init"))
	if err != nil {
		return 0, err
	}
	q := min(1, float64(p.BatchSize)/float64(part.N))
	cfg := dpsgd.Config{SamplingRate: q, Steps: dpsgd.StepsForEpochs(p.Epochs, q), LearningRate: c.Values[LearningRate],
		ClipNorm: c.Values[ClipNorm], Momentum: p.Momentum, Seed: &seed}
	if p.Private {
		cfg.NoiseMultiplier = p.NoiseMultiplier
	} else {
		cfg.NonPrivate = true
	}
	if _, err := dpsgd.Train(ctx, net, part, cfg, nil, nil); err != nil {
		if errors.Is(err, dpsgd.ErrDiverged) {
			return 0, nil
		}
		return 0, err
	}
	m, err := dpsgd.Evaluate(ctx, net, p.Val.X, p.Val.Y)
	return m.Accuracy, err
}

func (p *PartitionScorer) readCache(fp string, per [][]float64, have [][]bool) error {
	if p.Cache == "" {
		return nil
	}
	f, err := os.Open(p.Cache)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			if text != fp {
				return fmt.Errorf("tuning: %s holds scores of another partition or other settings; a rerun resumes only with the same --seed and settings (else remove the file or name another cache)", p.Cache)
			}
			continue
		}
		var i, j int
		var acc float64
		if _, err := fmt.Sscanf(text, "%d,%d,%g", &i, &j, &acc); err != nil || i < 0 || i >= len(per) || j < 0 || j >= len(per[0]) || !(acc >= 0 && acc <= 1) {
			return fmt.Errorf("tuning: %s, line %d: bad record %q", p.Cache, line, text)
		}
		per[i][j], have[i][j] = acc, true
	}
	return sc.Err()
}

func (p *PartitionScorer) appendCache(fp string, i, j int, acc float64) error {
	if p.Cache == "" {
		return nil
	}
	_, statErr := os.Stat(p.Cache)
	f, err := os.OpenFile(p.Cache, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		fmt.Fprintln(f, fp)
	}
	if _, err := fmt.Fprintf(f, "%d,%d,%s\n", i, j, strconv.FormatFloat(acc, 'g', -1, 64)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
