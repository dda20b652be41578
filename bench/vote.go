package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"
)

// VoteReport is dptune bench vote's vote.json: the simulation (Figure 2),
// the real-data points (Figures 5 and 6, and the dp-sgd variant), the
// splits, and where and how long it ran.
type VoteReport struct {
	Simulation []VoteSimPoint  `json:"simulation"`
	SimConfig  VoteSimConfig   `json:"simulation_config"`
	Real       []VoteRealPoint `json:"real,omitempty"`
	Splits     []VoteSplit     `json:"splits,omitempty"`
	RealConfig map[string]any  `json:"real_config,omitempty"`
	CPUs       int             `json:"cpus"`
	LoadAvg    string          `json:"load_avg"` // at the end
	Seconds    float64         `json:"wall_seconds"`
}

// MaxVoteReps is the most repetitions per point the vote simulation
// (VoteSimConfig.Reps) and the real-data votes (VoteRealConfig.Reps) run:
// 10⁶, as many as Xiang et al.'s audits play (Section 5.4), puts a point's
// 95% interval within ±0.001. A real-data point keeps 8 bytes per
// repetition (8 MB at the bound), and each repetition of either costs a
// vote of every client, so the bound also keeps a run finite.
const MaxVoteReps = 1_000_000

// CheckVoteReps returns an error unless reps is in [1, MaxVoteReps]; what
// names the setting in the message (a flag, say).
func CheckVoteReps(what string, reps int) error {
	if reps < 1 || reps > MaxVoteReps {
		return fmt.Errorf("%s %d is outside [1, %d]", what, reps, MaxVoteReps)
	}
	return nil
}

// Vote reproduces DP-Hype's figures into dir: the simulation (VoteFigure2)
// and, unless real is nil, the real-data figures (VoteReal) as
// vote_<dataset>.png (final training non-private, the paper's setting),
// vote_<dataset>_dpsgd.png (final training dp-sgd) and
// vote_<dataset>_splits.png, with every number in vote.json.
func Vote(ctx context.Context, dir string, sim VoteSimConfig, real *VoteRealConfig) (VoteReport, error) {
	start := time.Now()
	rep := VoteReport{SimConfig: sim, CPUs: runtime.NumCPU()}
	// Both counts are checked before any work: a bad one found after the
	// simulation would waste it.
	if err := CheckVoteReps("bench vote: simulation repetitions", sim.Reps); err != nil {
		return rep, err
	}
	if real != nil {
		if err := CheckVoteReps("bench vote: votes per point", real.Reps); err != nil {
			return rep, err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return rep, err
	}
	var err error
	if rep.Simulation, err = VoteFigure2(ctx, sim, dir); err != nil {
		return rep, err
	}
	if real != nil {
		if real.CacheDir == "" {
			real.CacheDir = dir
		}
		if rep.Real, rep.Splits, err = VoteReal(ctx, *real); err != nil {
			return rep, err
		}
		name := real.Source.Name
		rep.RealConfig = map[string]any{"dataset": name, "model": real.Source.Arch.Name, "subset": real.Subset,
			"iid_clients": real.IIDClients, "alphas": real.Alphas, "alpha_clients": real.AlphaClients, "dirichlet_clients": real.DirichletClients, "epsilons": real.Epsilons,
			"delta": real.Delta, "votes_per_client": real.VotesPerClient, "local_epochs": real.LocalEpochs, "batch_size": real.BatchSize,
			"fedavg_rounds": real.Rounds, "clip_norm": real.ClipNorm, "dpsgd_epsilons": real.DPSGDEpsilons, "reps": real.Reps,
			"space": real.Space.Name}
		if err := PlotVoteReal(rep.Real, "non-private", name+", non-private FedAvg", filepath.Join(dir, "vote_"+name+".png")); err != nil {
			return rep, err
		}
		if len(real.DPSGDEpsilons) > 0 {
			if err := PlotVoteReal(rep.Real, "dp-sgd", name+", DP-SGD FedAvg", filepath.Join(dir, "vote_"+name+"_dpsgd.png")); err != nil {
				return rep, err
			}
		}
		if err := PlotVoteSplits(rep.Splits, filepath.Join(dir, "vote_"+name+"_splits.png")); err != nil {
			return rep, err
		}
	}
	rep.LoadAvg, rep.Seconds = LoadAvg(), time.Since(start).Seconds()
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return rep, err
	}
	return rep, os.WriteFile(filepath.Join(dir, "vote.json"), b, 0o644)
}
