package federated

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// Shares deals all among the job's clients by its public split
// (data.SplitClients with SplitSeed): share i is client i's data.
func (j Job) Shares(all *data.Dataset) ([]*data.Dataset, error) {
	return data.SplitClients(all, j.Clients, j.SplitAlpha, rand.New(rand.NewPCG(j.SplitSeed, 0)))
}

// HoldOut splits a client's data into the part it trains the candidates on
// and the HeldOut fraction (at least one example) it scores them on. It
// fails for fewer than two examples; the client then abstains from the
// vote rather than leave (Client.Run).
func (j Job) HoldOut(mine *data.Dataset, rng *rand.Rand) (train, held *data.Dataset, err error) {
	nHeld := max(1, int(j.HeldOut*float64(mine.N)))
	if mine.N < nHeld+1 {
		return nil, nil, fmt.Errorf("%d examples are too few to hold some out", mine.N)
	}
	return data.Split(mine, nHeld, rng)
}

// average is FedAvg's new global model: the plain mean of the clients'
// parameters (equal weights, so no client's data size enters it).
func average(updates [][]float32) ([]float32, error) {
	if len(updates) == 0 {
		return nil, fmt.Errorf("%w: no client sent a model", ErrAborted)
	}
	sum := make([]float64, len(updates[0]))
	for _, v := range updates {
		if len(v) != len(sum) {
			return nil, fmt.Errorf("%w: clients sent models of different sizes", ErrAborted)
		}
		for i, x := range v {
			sum[i] += float64(x)
		}
	}
	avg := make([]float32, len(sum))
	for i := range sum {
		avg[i] = float32(sum[i] / float64(len(updates)))
	}
	return avg, nil
}

// FedAvg runs the job's final training of candidate c in this process, as
// Server and Client do over gRPC with every client live: Final.Rounds rounds
// in which each client of shares trains from the current average (Final's
// local DP-SGD or SGD), then the plain average — or, with FinalDPFedAvg,
// the global model plus the decoded sum of every client's UpdateSum
// encoding (the sum the secure summation would reveal). A client whose
// local training fails (divergence, a panic) sends the zero update, and
// one without data the zero update or, with FinalDPSGD, noise-only steps,
// as the gRPC client does (localRound); the plain average clips every
// update to MaxModelUpdate, as the server does. Simulations use it (bench
// vote); seed, if set, makes it reproducible. Errors: ctx's.
func (j Job) FedAvg(ctx context.Context, shares []*data.Dataset, c int, seed *uint64) (*model.Net, error) {
	j.LocalTimeout = 0 // one process plays every client: no server deadline to keep
	net, err := model.New(j.Arch, randsrc.New(&j.InitSeed, "init"))
	if err != nil {
		return nil, err
	}
	global := slices.Clone(net.Params)
	cand := j.Space.At(c).Values
	upd := j.Updates(len(global))
	for r := range j.Final.Rounds {
		updates := make([][]float32, len(shares))
		sum := make([]uint64, len(global))
		for i, d := range shares {
			copy(net.Params, global)
			var s *uint64
			if seed != nil {
				v := *seed + uint64(i)<<40
				s = &v
			}
			if _, err := j.localRound(ctx, net, d, cand, r, s); err != nil {
				return nil, fmt.Errorf("vote: FedAvg round %d, client %d: %w", r+1, i, err)
			}
			if j.Final.Mode != FinalDPFedAvg {
				updates[i] = clipModel(net.Params, global, MaxModelUpdate)
				continue
			}
			x, err := upd.Encode(delta(net.Params, global), randsrc.New(s, fmt.Sprintf("update %d", r+1)))
			if err != nil {
				return nil, err
			}
			for k, w := range x {
				sum[k] += w
			}
		}
		if j.Final.Mode == FinalDPFedAvg {
			for k, v := range upd.Decode(sum, len(shares)) {
				global[k] += float32(v)
			}
		} else if global, err = average(updates); err != nil {
			return nil, err
		}
	}
	copy(net.Params, global)
	return net, nil
}
