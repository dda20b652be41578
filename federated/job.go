package federated

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/dptune/dptune/internal/randsrc"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning/space"
)

// Final training modes.
const (
	FinalDPSGD      = "dp-sgd"      // every client runs DP-SGD in every FedAvg round
	FinalDPFedAvg   = "dp-fedavg"   // client-level DP-FedAvg: clipped updates, noise in the secure sum (UpdateSum)
	FinalNonPrivate = "non-private" // the paper's setting: plain local SGD; the model is not private
)

// Job is everything a client is told when it joins: public, fixed before
// any data is read.
type Job struct {
	Dataset    string      `json:"dataset"` // the client checks it holds this dataset
	Arch       model.Arch  `json:"arch"`
	Space      space.Space `json:"space"`
	Clients    int         `json:"clients"`
	SplitAlpha float64     `json:"split_alpha"` // 0: IID; > 0: Dirichlet(α) (data.SplitClients)
	SplitSeed  uint64      `json:"split_seed"`  // the simulation's split, shared by every client
	NominalN   int         `json:"nominal_n"`   // public size of the whole training set
	HeldOut    float64     `json:"held_out"`    // fraction of a client's data it scores candidates on
	// Local candidate training (non-private, as in the paper).
	LocalEpochs    int    `json:"local_epochs"`
	LocalBatchSize int    `json:"local_batch_size"`
	InitSeed       uint64 `json:"init_seed"` // public seed of every model's initial parameters
	// LocalTimeout, if positive, bounds each stretch of a client's local
	// training (the candidates' scores; one FedAvg round's training): a
	// client still training then abstains or sends the zero update, as
	// after any local failure, rather than be dropped by the server's
	// deadline — so that slow data (a larger share) does not show as a
	// dropout. Set it below the server's TrainingTimeout.
	LocalTimeout time.Duration `json:"local_timeout,omitempty"`

	Mechanism Mechanism `json:"mechanism"`
	Threshold int       `json:"threshold"` // secure summation's t: Threshold(Clients, Colluding) or more
	// Colluding is c, the number of clients that may collude with the
	// server; the secure sums hold against such a server when 2t > n + c.
	Colluding int   `json:"colluding"`
	Final     Final `json:"final"`
}

// Threshold is the secure summation's threshold for n clients of which c
// may collude with the server: the least t with 2t > n + c, at least 2,
// t = max(⌊(n+c)/2⌋ + 1, 2). A server that sends two survivor sets U3 to
// two groups of clients needs t signatures on each, at least t − c of them
// from honest clients, who sign once: 2(t − c) > n − c of those do not
// exist (Bonawitz et al. 2017, §4's active-adversary argument).
func Threshold(n, c int) int { return max((n+c)/2+1, 2) }

// Final is the federated training of the winner (FedAvg, McMahan et al.
// 2017, Algorithm 1 with every client in every round and equal weights, so
// no client's data size enters the average).
//
// With FinalDPSGD, SamplingRate, NoiseMultiplier and ClipNorm are every
// client's local DP-SGD's (per-example clipping). With FinalDPFedAvg the
// local training is plain SGD at SamplingRate, and NoiseMultiplier, ClipNorm
// and Scale are the UpdateSum's: ClipNorm bounds a client's whole update.
type Final struct {
	Mode            string  `json:"mode"` // FinalDPSGD, FinalDPFedAvg or FinalNonPrivate
	Rounds          int     `json:"rounds"`
	StepsPerRound   int     `json:"steps_per_round"`
	SamplingRate    float64 `json:"sampling_rate"` // q of every client's local training
	NoiseMultiplier float64 `json:"noise_multiplier"`
	ClipNorm        float64 `json:"clip_norm"`
	Scale           float64 `json:"scale,omitempty"` // FinalDPFedAvg: the UpdateSum's S
}

// Updates is the UpdateSum of a FinalDPFedAvg round for a model of d
// parameters.
func (j Job) Updates(d int) UpdateSum {
	return UpdateSum{Clients: j.Clients, Dimension: d, ClipNorm: j.Final.ClipNorm, NoiseMultiplier: j.Final.NoiseMultiplier,
		Scale: j.Final.Scale, Dropout: j.Mechanism.Dropout, Colluding: j.Colluding}
}

// NumParams is the number of parameters of the job's network.
func (j Job) NumParams() (int, error) {
	net, err := model.NewZero(j.Arch)
	if err != nil {
		return 0, err
	}
	return net.NumParams(), nil
}

// ClientNominalN is a client's public nominal data size: NominalN/n. Every
// client's DP-SGD divides its noisy sum by q times it, never by a count of
// its private data.
func (j Job) ClientNominalN() float64 { return float64(j.NominalN) / float64(j.Clients) }

// TrainingEvent is the privacy event of the final training with every
// round's sum at its fewest survivors: with FinalDPSGD one client's local
// DP-SGD over every round, example-level (an example lives in one client);
// with FinalDPFedAvg the rounds' UpdateSums, client-level; or NonPrivate.
func (j Job) TrainingEvent() (accounting.Event, error) {
	switch j.Final.Mode {
	case FinalNonPrivate:
		return accounting.NonPrivate{Reason: "federated training without noise (--final-training non-private)"}, nil
	case FinalDPFedAvg:
		d, err := j.NumParams()
		if err != nil {
			return nil, err
		}
		u := j.Updates(d)
		return accounting.SelfComposed{Event: u.Event(u.MinSurvivors()), Count: j.Final.Rounds}, nil
	}
	return accounting.DPSGD(j.Final.NoiseMultiplier, j.Final.SamplingRate, j.Final.Rounds*j.Final.StepsPerRound), nil
}

// Check returns an error if the job cannot run.
func (j Job) Check() error {
	if err := CheckSpace(j.Space); err != nil {
		return err
	}
	if err := j.Mechanism.Check(); err != nil {
		return err
	}
	switch {
	case j.Mechanism.Clients != j.Clients || j.Mechanism.Candidates != j.Space.Size():
		return fmt.Errorf("vote: the mechanism is for %d clients and %d candidates, the job has %d and %d", j.Mechanism.Clients, j.Mechanism.Candidates, j.Clients, j.Space.Size())
	case j.Colluding < 0 || j.Colluding >= j.Clients:
		return fmt.Errorf("vote: %d clients colluding with the server: need 0 ≤ c < n = %d", j.Colluding, j.Clients)
	case j.Mechanism.Colluding != j.Colluding:
		return fmt.Errorf("vote: the vote's noise is sized for %d colluding clients, the job names %d", j.Mechanism.Colluding, j.Colluding)
	case j.Threshold < Threshold(j.Clients, j.Colluding) || j.Threshold > j.Mechanism.MinSurvivors():
		return fmt.Errorf("vote: threshold %d: need 2t > n + c with n = %d, c = %d (t ≥ %d) and t ≤ ⌈(1−f)n⌉ = %d", j.Threshold, j.Clients, j.Colluding, Threshold(j.Clients, j.Colluding), j.Mechanism.MinSurvivors())
	case !(j.SplitAlpha >= 0) || math.IsInf(j.SplitAlpha, 1):
		return fmt.Errorf("vote: Dirichlet concentration %v", j.SplitAlpha)
	case !(j.HeldOut > 0 && j.HeldOut < 1):
		return fmt.Errorf("vote: held-out fraction %v: need 0 < h < 1", j.HeldOut)
	case j.LocalTimeout < 0:
		return fmt.Errorf("vote: local timeout %v is negative", j.LocalTimeout)
	case j.LocalEpochs < 1 || j.LocalBatchSize < 1 || j.NominalN < j.Clients:
		return fmt.Errorf("vote: local training of %d epochs, batch %d, %d examples for %d clients", j.LocalEpochs, j.LocalBatchSize, j.NominalN, j.Clients)
	case j.Final.Mode != FinalDPSGD && j.Final.Mode != FinalDPFedAvg && j.Final.Mode != FinalNonPrivate:
		return fmt.Errorf("vote: final training %q: want %s, %s or %s", j.Final.Mode, FinalDPSGD, FinalDPFedAvg, FinalNonPrivate)
	case j.Final.Rounds < 1 || j.Final.StepsPerRound < 1 || !(j.Final.SamplingRate > 0 && j.Final.SamplingRate <= 1):
		return fmt.Errorf("vote: final training of %d rounds × %d steps at q = %v", j.Final.Rounds, j.Final.StepsPerRound, j.Final.SamplingRate)
	case j.Final.Mode == FinalDPSGD && (!(j.Final.NoiseMultiplier > 0) || !(j.Final.ClipNorm > 0)):
		return fmt.Errorf("vote: DP-SGD final training needs a positive noise multiplier and clipping norm")
	case j.Final.Mode == FinalDPSGD && len(dpsgd.Stages(j.Arch)) > 0:
		// Each client's private rounds would estimate the layer on its own
		// data, which the final training's event does not count.
		return fmt.Errorf("vote: DP-SGD final training does not take network %s: its %s layer spends privacy before training", j.Arch.Name, dpsgd.Stages(j.Arch)[0].Type)
	case j.Final.Mode == FinalDPFedAvg:
		d, err := j.NumParams()
		if err != nil {
			return err
		}
		return j.Updates(d).Check()
	}
	return nil
}

// candidateConfig is the local training of candidate c on n examples.
func (j Job) candidateConfig(c map[string]float64, n int) dpsgd.Config {
	q := min(1, float64(j.LocalBatchSize)/float64(n))
	return dpsgd.Config{NonPrivate: true, SamplingRate: q, ExpectedBatchSize: q * float64(n),
		Steps: int(math.Ceil(float64(j.LocalEpochs) / q)), LearningRate: c[LearningRate],
		Momentum: c[Momentum], LRDecay: c[LRDecay], Seed: &j.InitSeed}
}

// LocalScores trains every candidate non-privately on train and returns its
// accuracy on held (a run that diverges scores 0). These scores never leave
// the client; only the noisy vote built from them does.
func (j Job) LocalScores(ctx context.Context, train, held *data.Dataset, progress func(done int)) ([]float64, error) {
	scores := make([]float64, j.Space.Size())
	for i := range scores {
		net, err := model.New(j.Arch, randsrc.New(&j.InitSeed, "init"))
		if err != nil {
			return nil, err
		}
		_, err = dpsgd.Train(ctx, net, train, j.candidateConfig(j.Space.At(i).Values, train.N), nil, nil)
		switch {
		case err == nil:
			m, err := dpsgd.Evaluate(ctx, net, held.X, held.Y)
			if err != nil {
				return nil, err
			}
			scores[i] = m.Accuracy
		case errors.Is(err, dpsgd.ErrDiverged):
			scores[i] = 0
		default:
			return nil, err
		}
		if progress != nil {
			progress(i + 1)
		}
	}
	return scores, nil
}
