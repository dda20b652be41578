package bench

import (
	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
)

// VoteRequest is DP-Hype's figures as a person asks for them (the flags of
// dptune bench vote, whose names the errors speak): Plan checks it and
// makes the simulation's and the real-data part's settings.
type VoteRequest struct {
	// SimOnly leaves out the real data; SimReps and Reps are the
	// simulation's repetitions and the real-data votes per point.
	SimOnly       bool
	SimReps, Reps int
	// Space names the candidate grid ("": the vote's MNIST space); Subset
	// the public subset of the training set used (0: all).
	Space  string
	Subset int
	// Clients are n of the IID settings, Alphas the Dirichlet α of the
	// non-IID ones, each with every n of AlphaClients (the first is the
	// dp-sgd figure's).
	Clients, AlphaClients []int
	Alphas                []float64
	// Epsilons are the vote's client-level ε, DPSGDEpsilons the total
	// example-level ε of the dp-sgd figure (none with NoDPSGD).
	Epsilons, DPSGDEpsilons []float64
	NoDPSGD                 bool
	Delta, ClipNorm         float64
	VotesPerClient          int
	LocalEpochs, BatchSize  int
	Rounds                  int
	Seed                    uint64
	// Out holds the figures, vote.json and the cache.
	Out string
}

// Plan checks r and returns the simulation's settings and, unless SimOnly,
// the real-data part's on the data data reads (once the settings that
// need no data are checked). It refuses, before any work, with an error
// wrapping job.ErrInvalid that names the flag at fault: repetitions
// outside [1, MaxVoteReps], a negative subset, no ε, settings that are not
// positive, client counts outside 2 … 255, α outside (0, 10⁶], an ε or δ
// that no vote can take, a space that cannot be voted on or has fewer
// candidates than the votes per client, an unwritable Out.
func (r VoteRequest) Plan(data func() (job.Source, error)) (VoteSimConfig, *VoteRealConfig, error) {
	sim := DefaultVoteSim
	switch {
	case CheckVoteReps("--sim-reps", r.SimReps) != nil:
		return sim, nil, job.Invalidf("--sim-reps %d is outside [1, %d]", r.SimReps, MaxVoteReps)
	case CheckVoteReps("--reps", r.Reps) != nil:
		return sim, nil, job.Invalidf("--reps %d is outside [1, %d]", r.Reps, MaxVoteReps)
	case r.Subset < 0:
		return sim, nil, job.Invalidf("--subset %d is negative", r.Subset)
	case len(r.Epsilons) == 0:
		return sim, nil, job.Invalidf("--epsilons needs at least one ε")
	case r.VotesPerClient < 1 || r.LocalEpochs < 1 || r.BatchSize < 1 || r.Rounds < 1 || !(r.ClipNorm > 0):
		return sim, nil, job.Invalidf("--votes-per-client, --local-epochs, --batch-size, --fedavg-rounds and --clip-norm must be positive")
	case len(r.AlphaClients) == 0:
		return sim, nil, job.Invalidf("--alpha-clients needs at least one n")
	}
	for _, n := range r.Clients {
		if n < 2 || n > 255 {
			return sim, nil, job.Invalidf("--clients %d: need 2 … 255", n)
		}
	}
	for _, n := range r.AlphaClients {
		if n < 2 || n > 255 {
			return sim, nil, job.Invalidf("--alpha-clients %d: need 2 … 255", n)
		}
	}
	for _, a := range r.Alphas {
		if !(a > 0) || a > 1e6 {
			return sim, nil, job.Invalidf("--alphas %v: need 0 < α ≤ 1e6", a)
		}
	}
	dpsgdEps := r.DPSGDEpsilons
	if r.NoDPSGD {
		dpsgdEps = nil
	}
	for _, e := range append(append([]float64{}, r.Epsilons...), dpsgdEps...) {
		if err := accounting.CheckEpsilon(e); err != nil {
			return sim, nil, job.Invalidf("ε = %v: %v", e, err)
		}
	}
	if err := accounting.CheckDelta(r.Delta); err != nil {
		return sim, nil, job.Invalidf("--delta: %v", err)
	}
	sim.Reps, sim.Delta, sim.Seed = r.SimReps, r.Delta, r.Seed
	var real *VoteRealConfig
	if !r.SimOnly {
		src, err := data()
		if err != nil {
			return sim, nil, err
		}
		space, err := job.LoadVoteSpace(r.Space)
		if err != nil {
			return sim, nil, job.Invalid(err)
		}
		if err := federated.CheckSpace(space); err != nil {
			return sim, nil, job.Invalid(err)
		}
		if r.VotesPerClient > space.Size() {
			return sim, nil, job.Invalidf("--votes-per-client %d exceeds the %d candidates", r.VotesPerClient, space.Size())
		}
		real = &VoteRealConfig{Source: src, Space: space, Subset: r.Subset, IIDClients: r.Clients, Alphas: r.Alphas, AlphaClients: r.AlphaClients[0],
			DirichletClients: r.AlphaClients, Epsilons: r.Epsilons, Delta: r.Delta, VotesPerClient: r.VotesPerClient, LocalEpochs: r.LocalEpochs,
			BatchSize: r.BatchSize, Rounds: r.Rounds, ClipNorm: r.ClipNorm, DPSGDEpsilons: dpsgdEps, Reps: r.Reps, Seed: r.Seed, CacheDir: r.Out}
	}
	if err := job.CheckOut(r.Out); err != nil {
		return sim, nil, job.Invalidf("--out: %v", err)
	}
	return sim, real, nil
}
