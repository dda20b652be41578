package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
