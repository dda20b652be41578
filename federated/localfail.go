package federated

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/noise"
)

// A client's local work can fail in ways that depend on its data: the
// candidates' or the winner's local SGD diverges (non-finite parameters),
// its share is too small to hold examples out, a bug panics on its
// examples. If such a client left the protocol, whether it drops — and so
// the survivor counts, the ledger's labels and the report — would depend
// on its data, and a neighbouring client dataset that makes training
// diverge would be told apart with certainty. So a client whose local work
// fails stays: it sends a contribution from the same set as every other
// client's, with its full noise share —
//
//   - in the vote, the all-zero vote vector (an abstention) plus its noise
//     share: ‖S·v − S·v′‖₂ ≤ S·√(2ℓ) and ‖·‖₁ ≤ 2ℓS still hold between any
//     two of {abstention, ℓ-vote}, so Mechanism.Event is unchanged;
//   - in a FedAvg round, the zero update (the global model back), which is
//     within every clipping bound; with FinalDPFedAvg it is encoded with
//     the full noise share like any other update. With FinalDPSGD, a
//     client without data runs its local DP-SGD's steps on empty batches
//     (noise only), as DP-SGD on an empty dataset would, and one whose
//     DP-SGD diverged sends the zero update: divergence is read off the
//     noisy iterates, so that is post-processing.
//
// Local training that outlasts the job's LocalTimeout counts as failed too,
// so a client with slow data abstains rather than miss the server's
// deadline. Only the end of the client's context (its process stopping)
// or a network failure makes it leave. The ledger's accounting at the realised number of
// survivors therefore assumes that dropouts — process and network failures
// — are independent of the clients' data.

// safely runs f, turning a panic into an error.
func safely(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("vote: local training panicked: %v", r)
		}
	}()
	return f()
}

// localVote is a client's vote vector: TopVotes of its local scores, or the
// all-zero abstention if it cannot score (no held-out split: train is nil)
// or its local training fails or outlasts LocalTimeout. It returns an
// error only when ctx ends; failed reports whether it abstained.
func (j Job) localVote(ctx context.Context, train, held *data.Dataset, progress func(done int)) (votes []int64, failed bool, err error) {
	abstain := make([]int64, j.Space.Size())
	if train == nil || held == nil {
		return abstain, true, nil
	}
	var scores []float64
	lctx, cancel := j.local(ctx)
	defer cancel()
	err = safely(func() (err error) {
		scores, err = j.LocalScores(lctx, train, held, progress)
		return err
	})
	if ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	if err != nil || len(scores) != len(abstain) {
		return abstain, true, nil
	}
	return TopVotes(scores, j.Mechanism.VotesPerClient), false, nil
}

// localRound is FedAvg round r's local training of candidate c on mine
// from net's parameters (the global model): on return net holds the
// client's new model, or the global model again (a zero update) if the
// training failed, outlasted LocalTimeout or left a non-finite parameter
// (failed is then true). A client without data sends the zero update, or
// with FinalDPSGD runs the round's steps on empty batches. It returns an
// error only when ctx ends.
func (j Job) localRound(ctx context.Context, net *model.Net, mine *data.Dataset, c map[string]float64, r int, seed *uint64) (failed bool, err error) {
	global := slices.Clone(net.Params)
	cfg := j.finalConfig(c, r, seed)
	lctx, cancel := j.local(ctx)
	defer cancel()
	err = safely(func() error {
		if mine == nil || mine.N == 0 {
			if j.Final.Mode == FinalDPSGD {
				return noiseOnly(lctx, net, cfg)
			}
			return nil
		}
		_, err := dpsgd.Train(lctx, net, mine, cfg, nil, nil)
		return err
	})
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil || !finite(net.Params) {
		copy(net.Params, global)
		return true, nil
	}
	return false, nil
}

// noiseOnly is dpsgd.Train of cfg on a dataset with no examples: every
// step's clipped sum is empty, so it adds N(0, (σC)²) per parameter,
// divides by the expected batch size and takes the momentum step at the
// step's learning rate — the same steps and noise draws as Train's
// (Abadi et al. 2016, Algorithm 1, with Poisson batches that are all empty).
func noiseOnly(ctx context.Context, net *model.Net, cfg dpsgd.Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	rng := randsrc.New(cfg.Seed, "noise")
	secure := cfg.Noise.Secure(cfg.Seed)
	std, scale := cfg.NoiseMultiplier*cfg.ClipNorm, 1/cfg.ExpectedBatchSize
	sum := make([]float32, len(net.Params))
	velocity := make([]float32, len(net.Params))
	mu := float32(cfg.Momentum)
	for step := range cfg.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		lr := float32(cfg.Schedule.Rate(cfg.LearningRate, step, cfg.Steps))
		if cfg.LRDecay > 0 {
			lr *= float32(math.Pow(cfg.LRDecay, cfg.SamplingRate*float64(step)))
		}
		clear(sum)
		noise.AddGaussian(sum, std, secure, rng)
		for k, g := range sum {
			v := mu*velocity[k] + float32(float64(g)*scale)
			velocity[k] = v
			net.Params[k] -= lr * v
		}
	}
	return nil
}

// local is ctx bounded by the job's LocalTimeout, if any.
func (j Job) local(ctx context.Context) (context.Context, context.CancelFunc) {
	if j.LocalTimeout > 0 {
		return context.WithTimeout(ctx, j.LocalTimeout)
	}
	return context.WithCancel(ctx)
}

// finite reports whether every value of v is finite.
func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}
