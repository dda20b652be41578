package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/tuning"
)

// VoteRealConfig is the real-data part of dptune bench vote: DP-Hype's
// Figures 5 and 6 (Opt, RandGuess and DP-Hype against ε, IID with n clients
// and Dirichlet(α) splits) on a public subset of a dataset.
type VoteRealConfig struct {
	Source job.Source   // the dataset and network
	Space  tuning.Space // default federated.MNISTSpace
	// Subset is the number of training examples used (a fixed public
	// subset, drawn with Seed), to fit the machine; 0 keeps them all.
	Subset int
	// IIDClients are the n of the IID settings; Alphas the Dirichlet
	// concentrations of the non-IID settings, each with each n of
	// DirichletClients (default: AlphaClients alone).
	IIDClients       []int
	Alphas           []float64
	AlphaClients     int
	DirichletClients []int
	// Epsilons are the vote's client-level ε (δ = Delta) of the paper's
	// figures (final training non-private).
	Epsilons       []float64
	Delta          float64
	VotesPerClient int
	LocalEpochs    int // of each candidate's local training
	BatchSize      int // of local training and of the final training
	Rounds         int // FedAvg rounds of the final training
	ClipNorm       float64
	// DPSGDEpsilons are the total example-level ε of the dp-sgd final
	// training figure, on the IID setting with AlphaClients clients; the
	// vote gets half of each.
	DPSGDEpsilons []float64
	Reps          int // vote repetitions per point (only the vote's noise is redrawn), in [1, MaxVoteReps]
	Seed          uint64
	CacheDir      string // local scores and federated accuracies, reused by a rerun
	// Progress, if set, is told what is being trained.
	Progress func(stage string, done, total int)
}

// VoteRealPoint is one point: the federated test accuracy of Opt (the best
// candidate), RandGuess (the mean over candidates) and DP-Hype's winner
// (mean over Reps votes, with a 95% interval that covers the vote's noise,
// not the training's randomness).
type VoteRealPoint struct {
	Setting       string  `json:"setting"` // "iid" or "dirichlet"
	Clients       int     `json:"clients"`
	Alpha         float64 `json:"alpha"`
	FinalTraining string  `json:"final_training"`
	Epsilon       float64 `json:"epsilon"`      // the figure's ε: the vote's (non-private), the total (dp-sgd)
	VoteEpsilon   float64 `json:"vote_epsilon"` // client level
	NoiseStddev   float64 `json:"vote_noise_stddev"`
	Opt           float64 `json:"opt"`
	RandGuess     float64 `json:"rand_guess"`
	DPHype        float64 `json:"dp_hype"`
	CI95          float64 `json:"ci95"`
	Reps          int     `json:"reps"`
	// Noiseless is the federated accuracy of the candidate that wins the
	// clients' votes summed without noise (ties to the lower index).
	Noiseless float64 `json:"noiseless_winner"`
}

// VoteSplit is a setting's split: label counts per client (Appendix B).
type VoteSplit struct {
	Clients int     `json:"clients"`
	Alpha   float64 `json:"alpha"`
	Counts  [][]int `json:"counts"` // [client][label]
	// TrainingSeconds is the wall time of the setting's training (local
	// scores and federated accuracies) summed over the runs that filled its
	// cache; nil when its cache came from a dptune that did not time it.
	TrainingSeconds *float64 `json:"training_seconds,omitempty"`
}

// voteCache is one setting's cached work.
type voteCache struct {
	Key    string               `json:"key"`
	Scores [][]float64          `json:"local_scores"`         // [client][candidate], held-out accuracy
	FedAcc map[string][]float64 `json:"federated_accuracies"` // by final-training label, per candidate
	// Seconds is the wall time of the training that filled the cache,
	// summed over the runs that added to it; nil for a cache written by a
	// dptune that did not record it.
	Seconds *float64 `json:"seconds,omitempty"`
	path    string
	last    time.Time // when the training now timed began
}

// VoteReal runs the real-data figures and returns their points and the
// splits. Every client's local scores and every candidate's federated
// accuracy are cached in CacheDir as they finish, so a rerun costs only the
// votes.
func VoteReal(ctx context.Context, cfg VoteRealConfig) ([]VoteRealPoint, []VoteSplit, error) {
	if err := CheckVoteReps("bench vote: votes per point", cfg.Reps); err != nil {
		return nil, nil, err
	}
	if cfg.Space.Name == "" {
		cfg.Space = federated.MNISTSpace
	}
	// A network with a fixed front end reads its features (computed once
	// per dataset into cfg.Source.Features, as train does).
	train, test, err := cfg.Source.LoadInputs(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	if cfg.Subset > 0 && cfg.Subset < train.N {
		perm := randsrc.Seeded(cfg.Seed, "bench vote subset").Perm(train.N)
		train = train.Subset(train.Name+"/subset", perm[:cfg.Subset])
	}
	src := cfg.Source.WithNominalSize(train.N)
	src.Load = func() (*data.Dataset, *data.Dataset, error) { return train, test, nil }
	type setting struct {
		name  string
		n     int
		alpha float64
	}
	var settings []setting
	for _, n := range cfg.IIDClients {
		settings = append(settings, setting{"iid", n, 0})
	}
	dirichletN := cfg.DirichletClients
	if len(dirichletN) == 0 {
		dirichletN = []int{cfg.AlphaClients}
	}
	for _, n := range dirichletN {
		for _, a := range cfg.Alphas {
			settings = append(settings, setting{"dirichlet", n, a})
		}
	}
	var pts []VoteRealPoint
	var splits []VoteSplit
	for _, st := range settings {
		spec := job.VoteSpec{Data: src, Space: cfg.Space, Delta: cfg.Delta, Clients: st.n, VotesPerClient: cfg.VotesPerClient,
			SplitAlpha: st.alpha, LocalEpochs: cfg.LocalEpochs, BatchSize: cfg.BatchSize, FinalTraining: federated.FinalNonPrivate,
			Rounds: cfg.Rounds, ClipNorm: cfg.ClipNorm, Seed: cfg.Seed}
		c, shares, err := voteSetting(ctx, cfg, spec, test)
		if err != nil {
			return nil, nil, err
		}
		split := VoteSplit{Clients: st.n, Alpha: st.alpha, Counts: data.LabelCounts(shares), TrainingSeconds: c.Seconds}
		for _, e := range cfg.Epsilons {
			spec.VoteEpsilon, spec.Epsilon = e, 2*e
			p, err := voteRepeat(ctx, cfg, spec, c.Scores, c.FedAcc[federated.FinalNonPrivate])
			if err != nil {
				return nil, nil, err
			}
			p.Setting, p.Alpha, p.Epsilon = st.name, st.alpha, e
			pts = append(pts, p)
		}
		for _, e := range cfg.DPSGDEpsilons {
			if st.name != "iid" || st.n != cfg.AlphaClients {
				break // the dp-sgd figure is IID at AlphaClients only
			}
			spec.FinalTraining, spec.Epsilon, spec.VoteEpsilon = federated.FinalDPSGD, e, e/2
			label := "dp-sgd eps=" + strconv.FormatFloat(e, 'g', -1, 64)
			acc, err := federatedAccuracies(ctx, cfg, spec, test, shares, c, label)
			if err != nil {
				return nil, nil, err
			}
			p, err := voteRepeat(ctx, cfg, spec, c.Scores, acc)
			if err != nil {
				return nil, nil, err
			}
			p.Setting, p.Epsilon = st.name, e
			pts = append(pts, p)
		}
		splits = append(splits, split) // after the dp-sgd trainings, which its time counts
	}
	return pts, splits, nil
}

// voteSetting returns one setting's local scores and non-private federated
// accuracies, from the cache or by training.
func voteSetting(ctx context.Context, cfg VoteRealConfig, spec job.VoteSpec, test *data.Dataset) (*voteCache, []*data.Dataset, error) {
	spec.VoteEpsilon, spec.Epsilon = 1, 2 // any valid budget: the local work does not depend on it
	plan, err := job.PlanVote(ctx, spec)
	if err != nil {
		return nil, nil, err
	}
	train, _, err := spec.Data.Load()
	if err != nil {
		return nil, nil, err
	}
	shares, err := plan.Shares(train)
	if err != nil {
		return nil, nil, err
	}
	key := fmt.Sprintf("%s %s n=%d alpha=%g N=%d space=%s/%d local=%d×%d rounds=%d clip=%g seed=%d", spec.Data.Name, plan.Arch.Name,
		plan.Clients, plan.SplitAlpha, plan.NominalN, plan.Space.Name, plan.Space.Size(), plan.LocalEpochs, plan.LocalBatchSize,
		plan.Final.Rounds, plan.Final.ClipNorm, cfg.Seed)
	path := filepath.Join(cfg.CacheDir, fmt.Sprintf("vote-%s-n%d-alpha%g.json", spec.Data.Name, plan.Clients, plan.SplitAlpha))
	c := &voteCache{Key: key, FedAcc: map[string][]float64{}, path: path}
	if b, err := os.ReadFile(path); err == nil {
		var old voteCache
		if err := json.Unmarshal(b, &old); err != nil {
			return nil, nil, fmt.Errorf("bench vote: cache %s: %w", path, err)
		}
		if old.Key == key {
			c = &old
			c.path = path
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	if c.Seconds == nil && len(c.Scores) == 0 {
		c.Seconds = new(float64) // a new cache: every second of its training is timed
	}
	c.last = time.Now()
	for i := len(c.Scores); i < len(shares); i++ {
		s := make([]float64, plan.Space.Size()) // a client too small to hold data out votes by the tie rule alone
		tr, held, err := plan.HoldOut(shares[i], randsrc.Seeded(cfg.Seed+uint64(i), "held-out"))
		if err == nil {
			s, err = plan.LocalScores(ctx, tr, held, nil)
			if err != nil {
				return nil, nil, err
			}
		}
		c.Scores = append(c.Scores, s)
		if err := c.save(); err != nil {
			return nil, nil, err
		}
		progress(cfg, fmt.Sprintf("local scores (n = %d, α = %g)", plan.Clients, plan.SplitAlpha), i+1, len(shares))
	}
	if _, err := federatedAccuracies(ctx, cfg, spec, test, shares, c, federated.FinalNonPrivate); err != nil {
		return nil, nil, err
	}
	return c, shares, nil
}

// federatedAccuracies trains every candidate by FedAvg on the clients'
// shares as spec's final training says and records its test accuracy under
// label in c (a diverged training counts as guessing, 1/classes).
func federatedAccuracies(ctx context.Context, cfg VoteRealConfig, spec job.VoteSpec, test *data.Dataset, shares []*data.Dataset, c *voteCache, label string) ([]float64, error) {
	plan, err := job.PlanVote(ctx, spec)
	if err != nil {
		return nil, err
	}
	acc := c.FedAcc[label]
	c.last = time.Now()
	for i := len(acc); i < plan.Space.Size(); i++ {
		seed := cfg.Seed + uint64(i)
		net, err := plan.FedAvg(ctx, shares, i, &seed)
		a := 1 / float64(test.Classes)
		switch {
		case err == nil:
			m, err := dpsgd.Evaluate(ctx, net, test.X, test.Y)
			if err != nil {
				return nil, err
			}
			a = m.Accuracy
		case !errors.Is(err, dpsgd.ErrDiverged):
			return nil, err
		}
		acc = append(acc, a)
		c.FedAcc[label] = acc
		if err := c.save(); err != nil {
			return nil, err
		}
		progress(cfg, fmt.Sprintf("federated training %s (n = %d, α = %g)", label, plan.Clients, plan.SplitAlpha), i+1, plan.Space.Size())
	}
	return acc, nil
}

// voteRepeat runs Reps votes of spec's calibrated mechanism on the cached
// scores — each client's NoisyShare with the exact discrete sampler, summed
// modulo 2^64 as the secure sum releases it, then Winner — and scores each
// winner by its federated accuracy.
func voteRepeat(ctx context.Context, cfg VoteRealConfig, spec job.VoteSpec, scores [][]float64, acc []float64) (VoteRealPoint, error) {
	plan, err := job.PlanVote(ctx, spec)
	if err != nil {
		return VoteRealPoint{}, err
	}
	m := plan.Mechanism
	votes := make([][]int64, len(scores))
	for i, s := range scores {
		votes[i] = federated.TopVotes(s, m.VotesPerClient)
	}
	rng := randsrc.Seeded(cfg.Seed, fmt.Sprintf("bench vote n=%d alpha=%g eps=%g %s", plan.Clients, plan.SplitAlpha, spec.VoteEpsilon, spec.FinalTraining))
	won := make([]float64, cfg.Reps)
	sum := make([]uint64, m.Candidates)
	for r := range won {
		if err := ctx.Err(); err != nil {
			return VoteRealPoint{}, err
		}
		clear(sum)
		for _, v := range votes {
			share, err := m.NoisyShare(v, rng)
			if err != nil {
				return VoteRealPoint{}, err
			}
			for j, w := range share {
				sum[j] += w
			}
		}
		won[r] = acc[federated.Winner(sum)]
	}
	mean, sd := meanSD(won)
	// The winner without noise: what the clients' votes point at, so a
	// reader can tell the noise's share of a miss from the local scores'.
	clear(sum)
	for _, v := range votes {
		for j, w := range v {
			sum[j] += uint64(w)
		}
	}
	noiseless := acc[federated.Winner(sum)]
	best, avg := math.Inf(-1), 0.0
	for _, a := range acc {
		best = math.Max(best, a)
		avg += a / float64(len(acc))
	}
	return VoteRealPoint{Clients: plan.Clients, FinalTraining: spec.FinalTraining, VoteEpsilon: spec.VoteEpsilon,
		NoiseStddev: m.NoiseStddev, Opt: best, RandGuess: avg, DPHype: mean, CI95: 1.96 * sd / math.Sqrt(float64(cfg.Reps)), Reps: cfg.Reps,
		Noiseless: noiseless}, nil
}

// save writes c whole, adding the time since the last save (or since the
// timed training began) to its Seconds.
func (c *voteCache) save() error {
	now := time.Now()
	if c.Seconds != nil {
		*c.Seconds += now.Sub(c.last).Seconds()
	}
	c.last = now
	b, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(c.path, b, 0o644)
}

func progress(cfg VoteRealConfig, stage string, done, total int) {
	if cfg.Progress != nil {
		cfg.Progress(stage, done, total)
	}
}
