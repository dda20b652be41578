package job

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// VoteSpec is one DP-Hype tuning: the vote over Space by Clients clients,
// then FedAvg of the winner.
type VoteSpec struct {
	Data  Source
	Space tuning.Space // federated.CheckSpace; default federated.MNISTSpace (LoadVoteSpace)
	// Epsilon and Delta are the total example-level budget of vote and
	// final training; VoteEpsilon (< Epsilon) is the vote's client-level ε
	// at Delta.
	Epsilon, Delta, VoteEpsilon float64
	Clients, VotesPerClient     int
	Dropout                     float64 // f
	// Colluding is c, the clients that may collude with the server: the
	// secure sums' threshold is t = max(⌊(n+c)/2⌋+1, 2) (2t > n + c), and
	// a spec with ⌈(1−f)n⌉ < t is refused.
	Colluding int
	// Transport secures the connections (mutual TLS unless Insecure).
	Transport              VoteTransport
	SplitAlpha             float64 // 0: IID; else Dirichlet(α)
	LocalEpochs, BatchSize int
	FinalTraining          string // federated.FinalDPSGD, federated.FinalDPFedAvg or federated.FinalNonPrivate
	Rounds                 int    // FedAvg rounds, one local epoch each
	// ClipNorm is the per-example clipping norm of DP-SGD, or with
	// FinalDPFedAvg the L2 bound of a client's update (parameter units).
	ClipNorm float64
	Seed     uint64 // public: the split and the initial parameters
	// TrainingTimeout and MessageTimeout are the deadlines of the rounds
	// with local training and of the other rounds (federated.Server's); a client
	// silent past one is a dropout. Zero means federated.DefaultTrainingTimeout
	// and federated.DefaultMessageTimeout. TrainingTimeout is also how long the
	// server admits clients (federated.Server.JoinTimeout): a client that has
	// not joined by then is a dropout, and the run goes on if ⌈(1−f)n⌉
	// clients joined, else aborts with nothing released.
	TrainingTimeout, MessageTimeout time.Duration
	// Test, if set, is Data's test set, already loaded (by a caller that
	// checked the data before starting the clients); else RunVote loads it.
	Test *data.Dataset
	// Progress, if set, receives the server's events (curator-side).
	Progress func(federated.Event)
}

// VoteReport is report.json of a vote.
type VoteReport struct {
	Tuner         string             `json:"tuner"`
	Selected      map[string]float64 `json:"selected"`
	TestAccuracy  float64            `json:"test_accuracy"`
	Epsilon       *float64           `json:"epsilon"`                 // vote + training; null when not private
	EpsilonLevel  string             `json:"epsilon_level,omitempty"` // "example" (dp-sgd) or "client" (dp-fedavg; implies the same example-level ε)
	Delta         float64            `json:"delta"`
	VoteEpsilon   float64            `json:"vote_client_epsilon"` // the vote alone, client-level
	ModelPrivate  bool               `json:"model_private"`
	Clients       int                `json:"clients"`
	Survivors     int                `json:"survivors"`
	NoiseStddev   float64            `json:"vote_noise_stddev"`
	FinalTraining string             `json:"final_training"`
	Traffic       federated.Traffic  `json:"client_bytes_sent"`
	Ledger        accounting.Ledger  `json:"ledger"`
}

// VoteFailedReport is failed-report.json of a vote that ended without a
// model after its vote was summed: what may have reached the clients (the
// winner, FedAvg rounds) and its ledger; Epsilon is the ledger's, null if
// unbounded.
type VoteFailedReport struct {
	Tuner         string            `json:"tuner"`
	Error         string            `json:"error"`
	Epsilon       *float64          `json:"epsilon"`
	Delta         float64           `json:"delta"`
	VoteEpsilon   float64           `json:"vote_client_epsilon"`
	Clients       int               `json:"clients"`
	Survivors     int               `json:"survivors"`
	NoiseStddev   float64           `json:"vote_noise_stddev"`
	FinalTraining string            `json:"final_training"`
	Ledger        accounting.Ledger `json:"ledger"`
}

// timeouts are s's round deadlines, defaults filled in.
func (s VoteSpec) timeouts() (training, message time.Duration) {
	training, message = s.TrainingTimeout, s.MessageTimeout
	if training == 0 {
		training = federated.DefaultTrainingTimeout
	}
	if message == 0 {
		message = federated.DefaultMessageTimeout
	}
	return training, message
}

// LoadVoteSpace returns the space of a vote: federated.MNISTSpace for "",
// else the builtin space or JSON file nameOrFile as tuning.LoadSpace reads
// it, with its errors. It does not check the space against the vote
// (federated.CheckSpace; PlanVote does).
func LoadVoteSpace(nameOrFile string) (tuning.Space, error) {
	if nameOrFile == "" {
		return federated.MNISTSpace, nil
	}
	s, err := tuning.LoadSpace(nameOrFile)
	if err != nil {
		return tuning.Space{}, err
	}
	return tuning.VoteSpace(s)
}

// PlanVote checks s and returns the job every client will be sent: the
// vote's noise calibrated to VoteEpsilon, the training's to the rest of
// Epsilon, and the clients' LocalTimeout four fifths of the training
// rounds' deadline (the vote tuner's tuning.Federated.Plan). Errors wrap
// ErrInvalid.
func PlanVote(ctx context.Context, s VoteSpec) (federated.Job, error) {
	tu, err := tuning.Lookup(tuning.VoteName)
	if err != nil {
		return federated.Job{}, invalid(err)
	}
	fed, ok := tu.(tuning.Federated)
	if !ok {
		return federated.Job{}, invalidf("the %s tuner is not federated", tuning.VoteName)
	}
	if layer := spendingLayer(s.Data.Arch, nil); layer != "" {
		// Each client's rounds would estimate the layer's statistics on
		// its own data, which neither the vote's nor DP-FedAvg's analysis
		// counts.
		return federated.Job{}, invalidf("the %s tuner does not train networks with a %s layer: its clients would spend privacy on it that the vote does not count", tuning.VoteName, layer)
	}
	j, err := fed.Plan(ctx, s.tuningSpec(), s.Epsilon, tuning.FederatedData{Dataset: s.Data.Name, Arch: s.Data.Arch})
	if err != nil {
		return j, invalid(err)
	}
	return j, nil
}

// tuningSpec is s as the vote tuner's spec: its settings as the tuner's
// options (tuning.VoteOptions).
func (s VoteSpec) tuningSpec() tuning.Spec {
	seed := s.Seed
	o := tuning.VoteOptions{Clients: s.Clients, VotesPerClient: s.VotesPerClient, VoteEpsilon: s.VoteEpsilon, Dropout: s.Dropout,
		SplitAlpha: s.SplitAlpha, LocalEpochs: s.LocalEpochs, FinalTraining: s.FinalTraining, Rounds: s.Rounds, ClipNorm: s.ClipNorm,
		Colluding: s.Colluding, RoundTimeout: s.TrainingTimeout, MessageTimeout: s.MessageTimeout}
	return tuning.Spec{Space: s.Space, Delta: s.Delta, TrainN: s.Data.NominalN, BatchSize: s.BatchSize, Seed: &seed, Options: o.Values()}
}

// RunVote plans s, serves it on lis (clients connect with VoteClient) until
// the last FedAvg round, evaluates the final model on the public test set
// and returns the release: the winner, the model, and the ledger — the vote
// (client-level, replace-one-client) composed with one client's training
// (example-level) or, with federated.FinalDPFedAvg, with every round's noisy
// update sum (client-level, so the whole ledger is). Only the winner of the
// noisy sum is released, never the counts.
//
// The ledger accounts the vote and each DP-FedAvg round at its realised
// number of survivors, which is released (in the labels and the report).
// That is sound only if whether a client drops out is independent of the
// clients' data: a client whose local work fails on its data stays in with
// a valid contribution (federated.Client), so dropouts are process and network
// failures — and clients silent past a round's deadline — only.
//
// A round that ends without its release (too few clients left) aborts the
// run with an error wrapping federated.ErrAborted; if the vote had already been
// summed, the error comes with a failed Release (Failed set, no model)
// whose ledger holds what may have reached the clients: the vote and the
// DP-FedAvg rounds begun, or one client's whole training. A
// final model with a non-finite parameter is an error, not a release.
// RunVote returns within seconds of the protocol's end or ctx's, whatever
// the connections to lis do.
func RunVote(ctx context.Context, s VoteSpec, lis net.Listener) (*Release, error) {
	j, err := PlanVote(ctx, s)
	if err != nil {
		return nil, err
	}
	test := s.Test
	if test == nil {
		if _, test, err = s.Data.Load(); err != nil {
			return nil, err
		}
	}
	srv, err := federated.NewServer(j)
	if err != nil {
		return nil, err
	}
	srv.Progress = s.Progress
	srv.TrainingTimeout, srv.MessageTimeout = s.timeouts()
	// A client that never joins must not stall the run: admissions close
	// after the training rounds' deadline.
	srv.JoinTimeout = srv.TrainingTimeout
	out, traffic, err := federated.Serve(ctx, srv, lis, federated.Transport(s.Transport))
	if errors.Is(err, federated.ErrTransport) {
		return nil, invalid(err)
	}
	if err != nil {
		return s.failedRelease(j, out, err)
	}
	for i, p := range out.Params {
		if math.IsNaN(float64(p)) || math.IsInf(float64(p), 0) {
			return nil, fmt.Errorf("vote: the final model's parameter %d is %v: nothing released", i, p)
		}
	}
	ledger, err := voteLedger(j, out)
	if err != nil {
		return nil, err
	}
	level := "example"
	if j.Final.Mode == federated.FinalNonPrivate {
		level = ""
	}
	if j.Final.Mode == federated.FinalDPFedAvg {
		level = "client"
	}
	rel := &Release{Delta: s.Delta, Accountant: "rdp", Ledger: ledger}
	voteEps, err := accounting.RDP{}.Epsilon(j.Mechanism.Event(len(out.Survivors)), s.Delta)
	if err != nil {
		return nil, err
	}
	total, err := ledger.Spent(accounting.RDP{}, s.Delta)
	if err != nil {
		return nil, err
	}
	net, err := model.NewZero(j.Arch)
	if err != nil {
		return nil, err
	}
	copy(net.Params, out.Params)
	m, err := Evaluate(ctx, net, test.X, test.Y) // the images, or the features of a network with a front end
	if err != nil {
		return nil, err
	}
	cand := j.Space.At(out.Winner).Values
	rep := &VoteReport{Tuner: tuning.VoteName, Selected: cand, TestAccuracy: m.Accuracy, Delta: s.Delta, VoteEpsilon: voteEps.Epsilon,
		EpsilonLevel: level, ModelPrivate: j.Final.Mode != federated.FinalNonPrivate, Clients: j.Clients, Survivors: len(out.Survivors),
		NoiseStddev: j.Mechanism.NoiseStddev, FinalTraining: j.Final.Mode, Traffic: traffic, Ledger: ledger}
	if rep.ModelPrivate && !math.IsInf(total.Epsilon, 1) {
		e := total.Epsilon
		rep.Epsilon, rel.Epsilon = &e, &e
	}
	rel.Model, rel.Selected, rel.Report = net, cand, rep
	rel.hyper = map[string]any{"tuner": tuning.VoteName, "selected": cand, "final_training": j.Final}
	return rel, nil
}

// failedRelease is RunVote's result when the protocol ended with err
// after out: err alone if no vote was summed, else with the failed Release
// of what may have reached the clients (Failed set, no model; its report a
// VoteFailedReport).
func (s VoteSpec) failedRelease(j federated.Job, out federated.Outcome, err error) (*Release, error) {
	if len(out.Survivors) == 0 {
		return nil, err
	}
	ledger, lerr := voteLedger(j, out)
	if lerr != nil {
		return nil, errors.Join(err, lerr)
	}
	rel := &Release{Delta: s.Delta, Accountant: "rdp", Ledger: ledger, Failed: true}
	rep := &VoteFailedReport{Tuner: tuning.VoteName, Error: failedVote(err), Delta: s.Delta, Clients: j.Clients, Survivors: len(out.Survivors),
		NoiseStddev: j.Mechanism.NoiseStddev, FinalTraining: j.Final.Mode, Ledger: ledger}
	if total, terr := ledger.Spent(accounting.RDP{}, s.Delta); terr == nil && !math.IsInf(total.Epsilon, 1) {
		e := total.Epsilon
		rep.Epsilon, rel.Epsilon = &e, &e
	}
	if v, verr := (accounting.RDP{}).Epsilon(j.Mechanism.Event(len(out.Survivors)), s.Delta); verr == nil {
		rep.VoteEpsilon = v.Epsilon
	}
	rel.Report = rep
	return rel, err
}

// voteLedger is the ledger of out: the vote at its survivors, then, with
// federated.FinalDPFedAvg, each round's sum at its survivors, else the final
// training's event (one client's training over every round, whether or
// not the rounds all ran). Every label and event depends on the survivor
// counts alone.
func voteLedger(j federated.Job, out federated.Outcome) (accounting.Ledger, error) {
	var ledger accounting.Ledger
	ledger.Add(fmt.Sprintf("DP-Hype vote: distributed discrete Gaussian over the secure sum of %d of %d clients' noisy votes (client-level, replace-one-client)", len(out.Survivors), j.Clients), j.Mechanism.Event(len(out.Survivors)))
	if j.Final.Mode == federated.FinalDPFedAvg {
		d, err := j.NumParams()
		if err != nil {
			return ledger, err
		}
		upd := j.Updates(d)
		for r, m := range out.RoundSurvivors {
			ledger.Add(fmt.Sprintf("DP-FedAvg round %d of the winner: distributed discrete Gaussian over the secure sum of %d of %d clients' clipped updates (client-level, replace-one-client)", r+1, m, j.Clients), upd.Event(m))
		}
		return ledger, nil
	}
	ev, err := j.TrainingEvent()
	if err != nil {
		return ledger, err
	}
	ledger.Add("FedAvg of the winner: one client's local training over every round (example-level)", ev)
	return ledger, nil
}

// VoteClient joins the DP-Hype server at addr over tr as one client holding
// src's training data (its share is dealt by the job's public split: share
// part of parts if part > 0, else over TLS the one its certificate binds,
// else the next free one; see federated.Client), and takes part until the end.
// Over TLS its certificate's key signs its secure-sum messages (the
// actively secure variant). progress, if set, is told what it is doing.
//
// The transport, the limits and the data are checked before joining: an
// unreadable source or invalid limits are refused (an error wrapping
// ErrInvalid) without a session, rather than joining and leaving. The
// server's job must meet lim (federated.Limits.Check: the client recomputes the
// job's ε itself); a job that misses it is refused with an error wrapping
// both ErrInvalid and federated.ErrRefused, before the client sends anything
// derived from its data.
func VoteClient(ctx context.Context, addr string, tr VoteTransport, src Source, part, parts int, lim federated.Limits, progress func(stage string, done, total int)) (federated.ClientReport, error) {
	if err := tr.CheckClient(addr, part); err != nil {
		return federated.ClientReport{}, err
	}
	if err := lim.Valid(); err != nil {
		return federated.ClientReport{}, invalid(err)
	}
	conn, err := federated.Dial(addr, federated.Transport(tr))
	if errors.Is(err, federated.ErrTransport) {
		return federated.ClientReport{}, invalid(err)
	}
	if err != nil {
		return federated.ClientReport{}, err
	}
	defer conn.Close()
	if id := conn.ID(); part == 0 && id >= 0 {
		part = id + 1
	}
	train, _, err := src.Load()
	if err != nil {
		return federated.ClientReport{}, invalid(err)
	}
	c := &federated.Client{Progress: progress, Part: part, Parts: parts, Limits: &lim, Load: func(j federated.Job) (*data.Dataset, error) {
		if j.Dataset != src.Name {
			return nil, fmt.Errorf("vote: the server's job is on %s, this client holds %s", j.Dataset, src.Name)
		}
		// The job's network reads its fixed front end's features, if it
		// has one: computed here (or read from src's feature cache) by
		// the same data-independent transform.
		s := src
		s.Arch = j.Arch
		return s.inputs(ctx, "train", train, nil)
	}}
	rep, err := conn.Run(ctx, c)
	if errors.Is(err, federated.ErrRefused) {
		return rep, invalid(err)
	}
	return rep, err
}

// VoteTransport secures the vote's gRPC connections: federated.Transport,
// whose doc gives the trust model. By default it is mutual TLS 1.3 (Cert
// and Key this side's certificate and key, CA the curator's CA, all PEM;
// VoteCertsRequest writes them); Insecure is plaintext gRPC on loopback
// addresses only, which withstands a semi-honest server only.
type VoteTransport federated.Transport

// CheckServer refuses, before any work, a server transport that cannot
// serve on addr (federated.Transport.CheckServer): --insecure off
// loopback, missing or unreadable files. Errors wrap ErrInvalid.
func (t VoteTransport) CheckServer(addr string) error {
	if err := federated.Transport(t).CheckServer(addr); err != nil {
		return invalid(err)
	}
	return nil
}

// CheckClient refuses, before any work, a client transport that cannot
// reach addr (federated.Transport.CheckClient): --insecure off loopback,
// missing or unreadable files, a certificate that binds no client ID or
// another part than part (if > 0). Errors wrap ErrInvalid.
func (t VoteTransport) CheckClient(addr string, part int) error {
	if err := federated.Transport(t).CheckClient(addr, part); err != nil {
		return invalid(err)
	}
	return nil
}

// Federation is how Tune serves a federated tuner (tuning.Federated): where
// its server listens, how the connections are secured, and who starts the
// clients.
type Federation struct {
	// Listener is where the server serves (Tune closes it); nil: a new one
	// on 127.0.0.1.
	Listener net.Listener
	// Transport secures the connections (mutual TLS unless Insecure).
	Transport VoteTransport
	// Test, if set, is the data's test set, already loaded (by a caller
	// that checked the data before any client starts).
	Test *data.Dataset
	// Launch, if set, starts the tuning's clients for the server at addr
	// once the job is planned; Tune calls wait when the server is done.
	// Nil: one client per share runs in this process (VoteClient, holding
	// the whole Data, its share dealt by the job), with the curator's ε, δ
	// and colluding clients as its limits, over an insecure Transport only.
	Launch func(ctx context.Context, addr string) (wait func(), err error)
	// Progress, if set, receives the server's events (curator-side).
	Progress func(federated.Event)
}

// TuneSpec is s as Tune's spec: the vote tuner with s's settings as its
// options, served over a Federation with s's transport, test set and
// progress (its Listener and Launch unset).
func (s VoteSpec) TuneSpec() TuneSpec {
	ts := s.tuningSpec()
	return TuneSpec{Data: s.Data, Tuner: tuning.VoteName, Space: ts.Space, Epsilon: s.Epsilon, Delta: s.Delta, BatchSize: s.BatchSize,
		Seed: ts.Seed, Options: ts.Options,
		Federation: &Federation{Transport: s.Transport, Test: s.Test, Progress: s.Progress}}
}

// VoteSpecOf is s, a tuning by the vote tuner, as a VoteSpec for PlanVote
// and RunVote: its options (tuning.VoteOptions) at their defaults where s
// has none, its transport, test set and progress s.Federation's (without
// one, an insecure transport). It refuses a budget file, an option the
// vote does not declare and one of the wrong type, wrapping ErrInvalid.
func VoteSpecOf(s TuneSpec) (VoteSpec, error) {
	tu, err := tuning.Lookup(tuning.VoteName)
	if err != nil {
		return VoteSpec{}, invalid(err)
	}
	fed, ok := tu.(tuning.Federated)
	if !ok {
		return VoteSpec{}, invalidf("the %s tuner is not federated", tuning.VoteName)
	}
	return s.voteSpec(fed)
}

// voteSpec is the vote of s (a federated tuner fed's spec), its options
// at their defaults where s has none; it refuses a budget file, an option
// the tuner does not declare and one of the wrong type.
func (s TuneSpec) voteSpec(fed tuning.Federated) (VoteSpec, error) {
	if s.Budget != "" {
		return VoteSpec{}, invalidf("--budget: the vote's ledger is partly client-level; a budget file counts example-level runs only")
	}
	if err := tuning.CheckOptions(fed, tuning.Spec{Options: s.Options}); err != nil {
		return VoteSpec{}, invalid(err)
	}
	o, _ := tuning.VoteOptionsOf(tuning.Spec{Options: s.Options}) // checked
	space, err := tuning.VoteSpace(s.Space)
	if err != nil {
		return VoteSpec{}, invalid(err)
	}
	v := VoteSpec{Data: s.Data, Space: space, Epsilon: s.Epsilon, Delta: s.Delta, BatchSize: s.BatchSize}
	if s.Seed != nil {
		v.Seed = *s.Seed
	}
	v.Clients, v.VotesPerClient, v.VoteEpsilon, v.Dropout, v.SplitAlpha = o.Clients, o.VotesPerClient, o.VoteEpsilon, o.Dropout, o.SplitAlpha
	v.LocalEpochs, v.FinalTraining, v.Rounds, v.ClipNorm, v.Colluding = o.LocalEpochs, o.FinalTraining, o.Rounds, o.ClipNorm, o.Colluding
	v.TrainingTimeout, v.MessageTimeout = o.RoundTimeout, o.MessageTimeout
	if f := s.Federation; f != nil {
		v.Transport, v.Test, v.Progress = f.Transport, f.Test, f.Progress
	} else {
		v.Transport = VoteTransport{Insecure: true}
	}
	return v, nil
}

// tuneFederated is Tune of a federated tuner: it plans the vote (refusing
// bad input before any client starts), starts the clients and serves the
// vote and FedAvg of the winner (RunVote).
func (s TuneSpec) tuneFederated(ctx context.Context, fed tuning.Federated) (*Release, *NotPrivateDiagnostics, error) {
	if s.Federation != nil && s.Federation.Listener != nil {
		defer s.Federation.Listener.Close()
	}
	v, err := s.voteSpec(fed)
	if err != nil {
		return nil, nil, err
	}
	if _, err := PlanVote(ctx, v); err != nil {
		return nil, nil, err
	}
	var f Federation
	if s.Federation != nil {
		f = *s.Federation
	}
	launch := f.Launch
	if launch == nil {
		if !v.Transport.Insecure {
			return nil, nil, invalidf("clients in this process connect over plaintext loopback only: set Federation.Launch to start clients with their own certificates")
		}
		launch = v.clientsInProcess
	}
	if f.Listener == nil {
		if f.Listener, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			return nil, nil, err
		}
	}
	wait, err := launch(ctx, f.Listener.Addr().String())
	if err != nil {
		f.Listener.Close()
		return nil, nil, err
	}
	rel, err := RunVote(ctx, v, f.Listener)
	wait()
	return rel, nil, err
}

// clientsInProcess starts s.Clients clients (VoteClient) in this process
// for the server at addr, each holding s.Data, with s's ε, δ and colluding
// clients as their limits; wait stops any still running and returns when
// all have.
func (s VoteSpec) clientsInProcess(ctx context.Context, addr string) (wait func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	lim := federated.Limits{MaxEpsilon: s.Epsilon, MaxDelta: s.Delta, Colluding: s.Colluding}
	for range s.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			VoteClient(ctx, addr, s.Transport, s.Data, 0, 0, lim, nil)
		}()
	}
	return func() { cancel(); wg.Wait() }, nil
}
