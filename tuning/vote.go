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

// VoteOptions are the vote tuner's settings: its options (their tags; see
// Option), the command line's flags of tune --tuner vote and vote serve.
type VoteOptions struct {
	// Clients is n, the number of clients.
	Clients int `option:"clients" default:"10" help:"number of client processes (2 … 255)"`
	// VotesPerClient is ℓ, the candidates each client votes for.
	VotesPerClient int `option:"votes-per-client" default:"3" help:"ℓ, the candidates each client votes for"`
	// VoteEpsilon is the vote's client-level ε at Spec.Delta.
	VoteEpsilon float64 `option:"vote-epsilon" default:"1" help:"the vote's client-level ε (part of --epsilon)"`
	// Dropout is f, the fraction of clients that may drop out.
	Dropout float64 `option:"dropout" default:"0" help:"fraction f of clients that may drop with the guarantee intact"`
	// SplitAlpha is 0 for an IID split, else Dirichlet(α).
	SplitAlpha float64 `option:"split-alpha" default:"0" help:"0 for an IID split, else the Dirichlet concentration α of a non-IID split"`
	// LocalEpochs are the epochs of a client's local training of each
	// candidate.
	LocalEpochs int `option:"local-epochs" default:"1" help:"epochs of each client's local (non-private) training of each candidate"`
	// FinalTraining is federated.FinalDPSGD, federated.FinalDPFedAvg or
	// federated.FinalNonPrivate.
	FinalTraining string `option:"final-training" default:"dp-sgd" help:"dp-sgd (each client runs DP-SGD in every FedAvg round; example-level ε), dp-fedavg (clipped client updates, noise in the secure sum; client-level ε, for many clients) or non-private (the paper's setting; the model is NOT private)"`
	// Rounds are the FedAvg rounds of the winner, one local epoch each.
	Rounds int `option:"fedavg-rounds" default:"5" help:"FedAvg rounds of the winner, one local epoch each"`
	// ClipNorm is the per-example clipping norm of DP-SGD, or with
	// federated.FinalDPFedAvg the L2 bound of a client's update.
	ClipNorm float64 `option:"clip-norm" default:"1" help:"clipping norm of the final DP-SGD (per example), or with dp-fedavg of each client's update"`
	// Colluding is c, the clients that may collude with the server.
	Colluding int `option:"colluding" default:"0" help:"c, the clients that may collude with the server; the secure sum's threshold is t = max(⌊(n+c)/2⌋+1, 2), and ⌈(1−f)n⌉ must reach it"`
	// RoundTimeout and MessageTimeout are the deadlines of the rounds with
	// local training and of the other rounds (federated.Server's); zero:
	// federated.DefaultTrainingTimeout and federated.DefaultMessageTimeout,
	// which are also their defaults (a test holds the tags to them, as
	// final-training's to federated.FinalDPSGD).
	RoundTimeout   time.Duration `option:"round-timeout" default:"1h" help:"deadline of a round in which the clients train (load the data, score the candidates, train a FedAvg round); a client silent past it is a dropout"`
	MessageTimeout time.Duration `option:"message-timeout" default:"1m" help:"deadline of the other rounds of the protocol (key exchange, unmasking); a client silent past it is a dropout"`
}

// Values returns o as the vote tuner's Spec.Options.
func (o VoteOptions) Values() Values { return OptionValues(o) }

// VoteOptionsOf returns the vote tuner's options in s, a missing one at
// its default, and an error wrapping ErrInvalid for a name the vote does
// not declare or a value of the wrong type (left at its default).
func VoteOptionsOf(s Spec) (VoteOptions, error) {
	return DecodeOptions[VoteOptions](VoteName, s.Options)
}

// voteOptions are VoteOptionsOf(s), its error left to Check.
func voteOptions(s Spec) VoteOptions {
	o, _ := VoteOptionsOf(s)
	return o
}

// VoteName is the vote's name in the registry: the tuner job's federated
// path serves and its reports name.
const VoteName = "vote"

func (voteTuner) Name() string { return VoteName }

func (voteTuner) Summary() string {
	return "DP-Hype: client processes each train every candidate on their share and cast a noisy vote over a secure sum (client-level ε); FedAvg trains the winner"
}

func (voteTuner) Options() []Option { return OptionsOf(VoteOptions{}) }

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
func (voteTuner) timeouts(s Spec) (training, message time.Duration) {
	o := voteOptions(s)
	training, message = o.RoundTimeout, o.MessageTimeout
	if training == 0 {
		training = federated.DefaultTrainingTimeout
	}
	if message == 0 {
		message = federated.DefaultMessageTimeout
	}
	return training, message
}

// mechanism is the vote of s before its noise is calibrated.
func (voteTuner) mechanism(s Spec) federated.Mechanism {
	o := voteOptions(s)
	return federated.Mechanism{Clients: o.Clients, Candidates: voteSpace(s.Space).Size(),
		VotesPerClient: o.VotesPerClient, Scale: federated.DefaultScale, Dropout: o.Dropout, Colluding: o.Colluding}
}

// Check refuses a vote that cannot run, from public facts: an option it
// does not know or of the wrong type (CheckOptions), the space, δ, the
// vote's ε, the deadlines, the sizes of the local and final training, the
// colluding clients, the secure sum's threshold against the fewest
// survivors, and the mechanism (Mechanism.Check).
func (tu voteTuner) Check(s Spec) error {
	if err := CheckOptions(tu, s); err != nil {
		return err
	}
	o := voteOptions(s)
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
	if eps := o.VoteEpsilon; !(eps > 0) || math.IsInf(eps, 1) {
		return invalidf("the vote's ε = %v must be positive and finite", eps)
	}
	if o.RoundTimeout < 0 || o.MessageTimeout < 0 {
		return invalidf("round deadlines %v and %v must not be negative", o.RoundTimeout, o.MessageTimeout)
	}
	if s.BatchSize < 1 || o.Rounds < 1 || o.LocalEpochs < 1 || !(o.ClipNorm > 0) {
		return invalidf("batch size %d, %d rounds, %d local epochs and clipping norm %v must be positive", s.BatchSize, o.Rounds, o.LocalEpochs, o.ClipNorm)
	}
	clients, colluding := o.Clients, o.Colluding
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
	m, err := federated.Calibrate(context.Background(), tu.mechanism(s), voteOptions(s).VoteEpsilon, s.Delta)
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
	o := voteOptions(s)
	space := voteSpace(s.Space)
	if err := federated.CheckSpace(space); err != nil {
		return federated.Job{}, invalid(err)
	}
	if err := accounting.CheckDelta(s.Delta); err != nil {
		return federated.Job{}, invalidf("%v", err)
	}
	if ve := o.VoteEpsilon; !(ve > 0) || !(eps > ve) || math.IsInf(eps, 1) {
		return federated.Job{}, invalidf("the vote's ε = %v must be positive and below the total ε = %v", ve, eps)
	}
	if err := tu.Check(s); err != nil {
		return federated.Job{}, err
	}
	clients, colluding := o.Clients, o.Colluding
	m, err := federated.Calibrate(ctx, tu.mechanism(s), o.VoteEpsilon, s.Delta)
	if err != nil {
		return federated.Job{}, invalidf("%v", err)
	}
	var seed uint64
	if s.Seed != nil {
		seed = *s.Seed
	}
	training, _ := tu.timeouts(s)
	j := federated.Job{Dataset: d.Dataset, Arch: d.Arch, Space: space, Clients: clients, SplitAlpha: o.SplitAlpha,
		SplitSeed: seed, NominalN: s.TrainN, HeldOut: 0.2, LocalEpochs: o.LocalEpochs, LocalBatchSize: s.BatchSize,
		InitSeed: seed, Mechanism: m, Threshold: federated.Threshold(clients, colluding), Colluding: colluding,
		LocalTimeout: training * 4 / 5,
		Final:        federated.Final{Mode: o.FinalTraining, Rounds: o.Rounds, ClipNorm: o.ClipNorm}}
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
