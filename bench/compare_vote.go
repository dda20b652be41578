package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/tuning"
)

// VoteCompareCell is DP-Hype (the vote tuner) at one total budget, over
// seeds: the vote over the clients' local scores at client-level ε/2, then
// DP-SGD federated training of the winner at example-level ε/2 (δ split
// likewise; VoteRealConfig.DPSGDEpsilons). Its guarantee is client-level
// for the vote, on its own split of the data among clients, so it is never
// a row of the central tuners' table.
type VoteCompareCell struct {
	Budget    float64 `json:"budget_epsilon"`
	Clients   int     `json:"clients"`
	Seeds     int     `json:"seeds"`
	Accuracy  float64 `json:"mean_test_accuracy"` // mean over seeds of the mean over the vote's repetitions
	CI95      float64 `json:"ci95"`               // 95% Student-t over seeds
	Opt       float64 `json:"opt"`                // the best candidate's accuracy, mean over seeds
	RandGuess float64 `json:"rand_guess"`         // the mean candidate's, mean over seeds
	Reps      int     `json:"vote_reps"`
}

// CompareVote runs VoteReal once per seed on cfg's IID setting with
// cfg.AlphaClients clients at each budget (cfg.CacheDir/seed-S holds each
// seed's reusable local scores and federated accuracies) and averages the
// seeds.
func CompareVote(ctx context.Context, cfg VoteRealConfig, budgets []float64, seeds []uint64, progress func(string)) ([]VoteCompareCell, error) {
	if err := CheckVoteReps("bench compare: votes per seed and budget", cfg.Reps); err != nil {
		return nil, err
	}
	cfg.IIDClients, cfg.Alphas, cfg.Epsilons, cfg.DPSGDEpsilons = []int{cfg.AlphaClients}, nil, nil, budgets
	base := cfg.CacheDir
	by := map[float64][]VoteRealPoint{}
	for _, s := range seeds {
		if progress != nil {
			progress(fmt.Sprintf("vote, seed %d", s))
		}
		cfg.Seed, cfg.CacheDir = s, filepath.Join(base, fmt.Sprintf("seed-%d", s))
		if err := os.MkdirAll(cfg.CacheDir, 0o755); err != nil {
			return nil, err
		}
		pts, _, err := VoteReal(ctx, cfg)
		if err != nil {
			return nil, err
		}
		for _, p := range pts {
			by[p.Epsilon] = append(by[p.Epsilon], p)
		}
	}
	var cells []VoteCompareCell
	for _, b := range budgets {
		pts := by[b]
		if len(pts) == 0 {
			continue
		}
		c := VoteCompareCell{Budget: b, Clients: cfg.AlphaClients, Seeds: len(pts), Reps: cfg.Reps}
		acc := make([]float64, len(pts))
		for i, p := range pts {
			acc[i] = p.DPHype
			c.Opt += p.Opt / float64(len(pts))
			c.RandGuess += p.RandGuess / float64(len(pts))
		}
		c.Accuracy, c.CI95 = meanCI95(acc)
		cells = append(cells, c)
	}
	return cells, nil
}

// VoteNotRun is why DP-Hype's table is not run under the comparison-wide
// options of s ("" when it runs): its clients train with flat clipping and
// it takes neither the default among its candidates nor a selection share.
func (s CompareRequest) VoteNotRun() string {
	var opts []string
	if s.Clipping.Rule == "automatic" {
		opts = append(opts, "--clipping automatic (its clients clip flat)")
	}
	if s.IncludeDefault {
		opts = append(opts, "--include-default")
	}
	if s.SelectionShare != 0 {
		opts = append(opts, "--selection-share")
	}
	if s.Subsample != 0 {
		opts = append(opts, "--subsample")
	}
	if len(opts) == 0 {
		return ""
	}
	return "the vote tuner takes none of " + strings.Join(opts, ", ")
}

// VoteConfig is DP-Hype's table of s on whole (Config's), each setting at
// the comparison's value or its own fixed one (10 clients with one vote
// each, one local epoch, batch 64, 3 FedAvg rounds, clipping norm 1), its
// cache in Out.
func (s CompareRequest) VoteConfig(whole job.Source) VoteRealConfig {
	return VoteRealConfig{Source: whole, Subset: s.VoteSubset, AlphaClients: 10, Delta: s.Delta, VotesPerClient: 1, LocalEpochs: 1,
		BatchSize: 64, Rounds: 3, ClipNorm: 1, Reps: s.VoteReps, CacheDir: filepath.Join(s.Out, tuning.VoteName)}
}

// AddVote adds DP-Hype's table to rep when s.Vote asks for it: CompareVote
// of VoteConfig on whole (Config's) at every budget and seed, progress
// told of each seed and stages of its work; under a comparison-wide option
// it does not take, rep.VoteNotRun says why instead, and so does notRun.
func (s CompareRequest) AddVote(ctx context.Context, rep *CompareReport, whole job.Source, progress func(string),
	stages func(stage string, done, total int)) (notRun string, err error) {
	if !s.Vote {
		return "", nil
	}
	if why := s.VoteNotRun(); why != "" {
		rep.VoteNotRun = why
		return why, nil
	}
	vc := s.VoteConfig(whole)
	vc.Progress = stages
	rep.Vote, err = CompareVote(ctx, vc, s.Budgets, CompareSeeds(s.Seeds), progress)
	return "", err
}
