package tuning

import (
	"context"
	"math"
	"time"

	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// Federated is a tuner whose candidates are scored by clients that each
// hold a share of the data and never send it (package federated): its
// caller serves the job Plan returns and starts or admits the clients.
type Federated interface {
	Tuner
	// Plan checks spec against a total budget of eps at spec.Delta (before
	// any data is read) and returns the job every client will be sent,
	// its final training's noise calibrated so that Event(its training's
	// event, spec) meets (eps, spec.Delta). Errors wrap ErrInvalid.
	Plan(ctx context.Context, spec Spec, eps float64, d FederatedData) (federated.Job, error)
}

// FederatedData are the public facts of the data a federated tuning's
// clients hold besides its nominal size (Spec.TrainN, the whole training
// set's).
type FederatedData struct {
	Dataset string     // its registered name; each client checks it holds it
	Arch    model.Arch // the network every client trains
}

// voteTuner is DP-Hype ("DP-Hype: Distributed Differentially Private
// Hyperparameter Search"; its protocol is package federated): each client
// trains every candidate locally, votes for its ℓ best with its share of
// distributed discrete Gaussian noise, the secure sum of the votes selects
// the winner, and FedAvg trains it. The vote is client-level (ε, δ)-DP
// (replace one client); the final training is DP-SGD on every client
// (example-level), DP-FedAvg (client-level) or not private.
type voteTuner struct{}

// Options of the vote tuner (Spec.Options).
const (
	voteClients        = "clients"
	voteVotes          = "votes-per-client"
	voteEpsilon        = "vote-epsilon"
	voteDropout        = "dropout"
	voteSplitAlpha     = "split-alpha"
	voteLocalEpochs    = "local-epochs"
	voteFinalTraining  = "final-training"
	voteRounds         = "fedavg-rounds"
	voteClipNorm       = "clip-norm"
	voteColluding      = "colluding"
	voteRoundTimeout   = "round-timeout"
	voteMessageTimeout = "message-timeout"
)

// VoteName is the vote's name in the registry: the tuner job's federated
// path serves and its reports name.
const VoteName = "vote"

func (voteTuner) Name() string { return VoteName }

func (voteTuner) Summary() string {
	return "DP-Hype: client processes each train every candidate on their share and cast a noisy vote over a secure sum (client-level ε); FedAvg trains the winner"
}

func (voteTuner) Options() []Option {
	return []Option{
		{Name: voteClients, Default: 10, Help: "number of client processes (2 … 255)"},
		{Name: voteVotes, Default: 3, Help: "ℓ, the candidates each client votes for"},
		{Name: voteEpsilon, Default: 1.0, Help: "the vote's client-level ε (part of --epsilon)"},
		{Name: voteDropout, Default: 0.0, Help: "fraction f of clients that may drop with the guarantee intact"},
		{Name: voteSplitAlpha, Default: 0.0, Help: "0 for an IID split, else the Dirichlet concentration α of a non-IID split"},
		{Name: voteLocalEpochs, Default: 1, Help: "epochs of each client's local (non-private) training of each candidate"},
		{Name: voteFinalTraining, Default: federated.FinalDPSGD, Help: "dp-sgd (each client runs DP-SGD in every FedAvg round; example-level ε), dp-fedavg (clipped client updates, noise in the secure sum; client-level ε, for many clients) or non-private (the paper's setting; the model is NOT private)"},
		{Name: voteRounds, Default: 5, Help: "FedAvg rounds of the winner, one local epoch each"},
		{Name: voteClipNorm, Default: 1.0, Help: "clipping norm of the final DP-SGD (per example), or with dp-fedavg of each client's update"},
		{Name: voteColluding, Default: 0, Help: "c, the clients that may collude with the server; the secure sum's threshold is t = max(⌊(n+c)/2⌋+1, 2), and ⌈(1−f)n⌉ must reach it"},
		{Name: voteRoundTimeout, Default: federated.DefaultTrainingTimeout, Help: "deadline of a round in which the clients train (load the data, score the candidates, train a FedAvg round); a client silent past it is a dropout"},
		{Name: voteMessageTimeout, Default: federated.DefaultMessageTimeout, Help: "deadline of the other rounds of the protocol (key exchange, unmasking); a client silent past it is a dropout"},
	}
}

// Uses: the number of runs is fixed (every client trains every
// candidate), and the clients score on their own held-out shares.
func (voteTuner) Uses() Uses { return Uses{} }

// Accountant: the vote and the final training are counted by RDP.
func (voteTuner) Accountant(Spec) accounting.Accountant { return accounting.RDP{} }

func (voteTuner) Label(s Spec) string {
	return "DP-Hype: the clients' noisy vote (client-level, at the fewest survivors) composed with FedAvg of the winner"
}

// voteSpace is s as a vote's space: federated.MNISTSpace if s has no name.
// A categorical dimension, which a vote's clients cannot train, leaves the
// space empty, which federated.CheckSpace refuses (Check calls VoteSpace
// first for the error that names it).
func voteSpace(s Space) Space {
	if s.Name == "" {
		return federated.MNISTSpace
	}
	if _, err := VoteSpace(s); err != nil {
		return Space{Name: s.Name}
	}
	return s
}

// VoteSpace returns s if a vote's clients can tune it: their local SGD
// takes numeric dimensions only, so a categorical dimension is an error
// that names it (federated.CheckNumeric). It does not check the rest
// (federated.CheckSpace does).
func VoteSpace(s Space) (Space, error) {
	if err := federated.CheckNumeric(s); err != nil {
		return Space{}, err
	}
	return s, nil
}

// timeouts are s's round deadlines, zero ones at federated's defaults.
func (tu voteTuner) timeouts(s Spec) (training, message time.Duration) {
	training, message = value[time.Duration](s, tu, voteRoundTimeout), value[time.Duration](s, tu, voteMessageTimeout)
	if training == 0 {
		training = federated.DefaultTrainingTimeout
	}
	if message == 0 {
		message = federated.DefaultMessageTimeout
	}
	return training, message
}

// mechanism is the vote of s before its noise is calibrated.
func (tu voteTuner) mechanism(s Spec) federated.Mechanism {
	return federated.Mechanism{Clients: value[int](s, tu, voteClients), Candidates: voteSpace(s.Space).Size(),
		VotesPerClient: value[int](s, tu, voteVotes), Scale: federated.DefaultScale, Dropout: value[float64](s, tu, voteDropout),
		Colluding: value[int](s, tu, voteColluding)}
}

// Check refuses a vote that cannot run, from public facts: the space, δ,
// the vote's ε, the deadlines, the sizes of the local and final training,
// the colluding clients, the secure sum's threshold against the fewest
// survivors, and the mechanism (Mechanism.Check).
func (tu voteTuner) Check(s Spec) error {
	if s.Space.Name != "" {
		if _, err := VoteSpace(s.Space); err != nil {
			return invalid(err)
		}
	}
	space := voteSpace(s.Space)
	if err := federated.CheckSpace(space); err != nil {
		return invalid(err)
	}
	if err := accounting.CheckDelta(s.Delta); err != nil {
		return invalidf("%v", err)
	}
	if eps := value[float64](s, tu, voteEpsilon); !(eps > 0) || math.IsInf(eps, 1) {
		return invalidf("the vote's ε = %v must be positive and finite", eps)
	}
	if value[time.Duration](s, tu, voteRoundTimeout) < 0 || value[time.Duration](s, tu, voteMessageTimeout) < 0 {
		return invalidf("round deadlines %v and %v must not be negative", value[time.Duration](s, tu, voteRoundTimeout), value[time.Duration](s, tu, voteMessageTimeout))
	}
	rounds, local, clip := value[int](s, tu, voteRounds), value[int](s, tu, voteLocalEpochs), value[float64](s, tu, voteClipNorm)
	if s.BatchSize < 1 || rounds < 1 || local < 1 || !(clip > 0) {
		return invalidf("batch size %d, %d rounds, %d local epochs and clipping norm %v must be positive", s.BatchSize, rounds, local, clip)
	}
	clients, colluding := value[int](s, tu, voteClients), value[int](s, tu, voteColluding)
	if colluding < 0 || colluding >= clients {
		return invalidf("--colluding %d: need 0 ≤ c < %d clients", colluding, clients)
	}
	m := tu.mechanism(s)
	if t := federated.Threshold(clients, colluding); m.MinSurvivors() < t {
		return invalidf("--dropout %g of %d clients leaves ⌈(1−f)n⌉ = %d survivors, fewer than the threshold t = %d that 2t > n + c needs with --colluding %d: lower --dropout or --colluding, or add clients",
			m.Dropout, clients, m.MinSurvivors(), t, colluding)
	}
	m.NoiseStddev = 1
	if err := m.Check(); err != nil {
		return invalidf("%v", err)
	}
	return nil
}

// voteComposed is the ledger event of a vote by m at its fewest survivors
// followed by a final training whose event is training.
func voteComposed(m federated.Mechanism, training accounting.Event) accounting.Event {
	return accounting.Composed{Events: []accounting.Event{m.Event(m.MinSurvivors()), training}}
}

// Event is the vote's client-level event at the fewest survivors, its noise
// calibrated to the vote's ε at s.Delta, composed with base, the final
// training's event (Job.TrainingEvent). For a spec Check refuses it is
// accounting.NonPrivate.
func (tu voteTuner) Event(base accounting.Event, s Spec) accounting.Event {
	if err := tu.Check(s); err != nil {
		return accounting.NonPrivate{Reason: err.Error()}
	}
	m, err := federated.Calibrate(context.Background(), tu.mechanism(s), value[float64](s, tu, voteEpsilon), s.Delta)
	if err != nil {
		return accounting.NonPrivate{Reason: err.Error()}
	}
	return voteComposed(m, base)
}

// Plan checks s and returns the job every client will be sent: the vote's
// noise calibrated to the vote's ε, the final training's to the rest of
// eps, and the clients' LocalTimeout four fifths of the training rounds'
// deadline. The split and the initial parameters are drawn from s.Seed
// (nil: 0).
func (tu voteTuner) Plan(ctx context.Context, s Spec, eps float64, d FederatedData) (federated.Job, error) {
	space := voteSpace(s.Space)
	if err := federated.CheckSpace(space); err != nil {
		return federated.Job{}, invalid(err)
	}
	if err := accounting.CheckDelta(s.Delta); err != nil {
		return federated.Job{}, invalidf("%v", err)
	}
	if ve := value[float64](s, tu, voteEpsilon); !(ve > 0) || !(eps > ve) || math.IsInf(eps, 1) {
		return federated.Job{}, invalidf("the vote's ε = %v must be positive and below the total ε = %v", ve, eps)
	}
	if err := tu.Check(s); err != nil {
		return federated.Job{}, err
	}
	clients, colluding := value[int](s, tu, voteClients), value[int](s, tu, voteColluding)
	m, err := federated.Calibrate(ctx, tu.mechanism(s), value[float64](s, tu, voteEpsilon), s.Delta)
	if err != nil {
		return federated.Job{}, invalidf("%v", err)
	}
	var seed uint64
	if s.Seed != nil {
		seed = *s.Seed
	}
	training, _ := tu.timeouts(s)
	j := federated.Job{Dataset: d.Dataset, Arch: d.Arch, Space: space, Clients: clients, SplitAlpha: value[float64](s, tu, voteSplitAlpha),
		SplitSeed: seed, NominalN: s.TrainN, HeldOut: 0.2, LocalEpochs: value[int](s, tu, voteLocalEpochs), LocalBatchSize: s.BatchSize,
		InitSeed: seed, Mechanism: m, Threshold: federated.Threshold(clients, colluding), Colluding: colluding,
		LocalTimeout: training * 4 / 5,
		Final: federated.Final{Mode: value[string](s, tu, voteFinalTraining), Rounds: value[int](s, tu, voteRounds),
			ClipNorm: value[float64](s, tu, voteClipNorm)}}
	j.Final.SamplingRate = min(1, float64(s.BatchSize)/j.ClientNominalN())
	j.Final.StepsPerRound = int(math.Ceil(1 / j.Final.SamplingRate))
	voteEvent := m.Event(m.MinSurvivors())
	switch j.Final.Mode {
	case federated.FinalDPSGD:
		j.Final.NoiseMultiplier, err = accounting.CalibrateNoise(ctx, accounting.RDP{}, func(sigma float64) accounting.Event {
			return voteComposed(m, accounting.DPSGD(sigma, j.Final.SamplingRate, j.Final.Rounds*j.Final.StepsPerRound))
		}, eps, s.Delta)
	case federated.FinalDPFedAvg:
		var n int
		if n, err = j.NumParams(); err != nil {
			return j, invalidf("%v", err)
		}
		j.Final.Scale = federated.DefaultUpdateScale(n, j.Final.ClipNorm)
		j.Final.NoiseMultiplier, err = federated.CalibrateUpdates(ctx, j.Updates(n), voteEvent, j.Final.Rounds, eps, s.Delta)
	}
	if err != nil {
		return j, invalidf("calibrating the final training: %v", err)
	}
	if err := j.Check(); err != nil {
		return j, invalid(err)
	}
	return j, nil
}

func init() { Register(voteTuner{}) }
