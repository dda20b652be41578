package federated

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/dptune/dptune/federated/secagg"
	pb "github.com/dptune/dptune/federated/votepb"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// ErrAborted is returned to every party of a round that ended without a
// release: fewer survivors than the mechanism needs, a failed check, or the
// server's context ending.
var ErrAborted = errors.New("vote: round aborted, nothing released")

// Server is DP-Hype's server as a gRPC service (pb.VoteServer): it admits
// Job.Clients clients, relays the secure summation's rounds, announces the
// argmax of the noisy sum, and averages the FedAvg rounds. It sees masked
// vectors, the noisy sum, and the clients' parameters in FedAvg; never a
// client's vote or scores.
//
// A round closes when every live client has sent its message; a client is
// live while its Join stream is open, so a client process that dies is
// dropped at once, and a client that stays silent past a round's deadline
// (TrainingTimeout, MessageTimeout) is dropped then. A client whose local
// work fails (divergence, too little data) does not drop: it sends a valid
// zero contribution (Client.Run), so dropouts are process and network
// failures only.
type Server struct {
	pb.UnimplementedVoteServer
	job Job
	// JoinTimeout, if positive, closes admissions that long after Wait
	// starts: clients that have not joined by then count as dropped, and
	// the run goes on with the others if at least ⌈(1−f)n⌉ joined, else
	// aborts (ErrAborted) at once. Zero waits for every client forever.
	JoinTimeout time.Duration
	// TrainingTimeout and MessageTimeout, if positive, are the deadlines of
	// the rounds in which the clients train locally (loading the data and
	// the secure sum's round 0 of the vote, its round 2 — the candidates'
	// local training — and every FedAvg round's local training) and of the
	// other rounds (protocol messages only), counted from the close of the
	// round before (the first, from the last client's Join). A client that
	// has not sent its message by then is dropped, as if its process had
	// died; zero waits forever.
	TrainingTimeout, MessageTimeout time.Duration
	// Progress, if set, is called (under the server's lock; keep it short)
	// as the protocol advances.
	Progress func(Event)
	// RequireClientCert refuses every call not made over mutual TLS; with
	// it, a client's ID is the one its certificate binds (server_auth.go).
	RequireClientCert bool

	session []byte // random id of this session, under every signature

	mu       sync.Mutex
	sums     map[int]*sumState // by sum: 0 the vote, r ≥ 1 FedAvg round r's updates
	dim      int               // the network's parameters
	joined   int
	taken    map[int]bool   // client IDs given out
	tokens   map[int][]byte // client ID → its Join token
	closed   bool           // admissions closed
	live     map[int]bool
	phases   map[string]*phase
	done     chan struct{}         // closed when Run returns; ends the Join streams
	admitted chan struct{}         // closed when every client has joined or admissions closed
	kicked   map[int]chan struct{} // closed when a client is dropped for silence; ends its Join stream
	failed   chan struct{}         // closed when a round fails; err says why
	finished bool                  // the last round has closed: leaving clients are not dropouts
	err      error
	result   Outcome
	global   []float32 // FedAvg's current model
	updates  map[int]map[int][]float32
}

// Event reports the server's progress.
type Event struct {
	Stage   string // "joined", "keys", "shares", "masked", "winner", "round", "dropped"
	Client  int    // for "joined" and "dropped"
	Round   int    // for "round"
	Live    int
	Winner  int
	Message string
}

// Outcome is what a finished vote gives the curator.
type Outcome struct {
	Winner    int   // candidate index
	Survivors []int // U3: the clients whose noisy votes are in the sum
	Answered  int   // clients that answered the unmasking
	// RoundSurvivors is, with FinalDPFedAvg, how many noisy updates each
	// round's sum held.
	RoundSurvivors []int
	Params         []float32 // the final FedAvg model's parameters
}

// sumState is one secure summation.
type sumState struct {
	agg *secagg.Server
	u1  []secagg.Keys
	u3  []int
	u4  []secagg.Signature
}

type phase struct {
	got    map[int]bool
	closed chan struct{}
	err    error
	close  func() error // runs under mu when every live client has sent
}

// NewServer returns the server of job (which it checks).
func NewServer(job Job) (*Server, error) {
	if err := job.Check(); err != nil {
		return nil, err
	}
	net, err := model.New(job.Arch, randsrc.New(&job.InitSeed, "init"))
	if err != nil {
		return nil, err
	}
	session := make([]byte, 32)
	if _, err := rand.Read(session); err != nil {
		return nil, err
	}
	return &Server{job: job, sums: map[int]*sumState{}, dim: net.NumParams(), global: net.Params, taken: map[int]bool{},
		live: map[int]bool{}, phases: map[string]*phase{}, done: make(chan struct{}), failed: make(chan struct{}), updates: map[int]map[int][]float32{},
		session: session, tokens: map[int][]byte{}, admitted: make(chan struct{}), kicked: map[int]chan struct{}{}}, nil
}

// sumLocked returns secure sum k (0: the vote; r ≥ 1: FedAvg round r's
// updates, only with FinalDPFedAvg), starting it on first use.
func (s *Server) sumLocked(k int) (*sumState, error) {
	if st, ok := s.sums[k]; ok {
		return st, nil
	}
	length := s.job.Space.Size()
	if k != 0 {
		if s.job.Final.Mode != FinalDPFedAvg || k < 0 || k > s.job.Final.Rounds {
			return nil, fmt.Errorf("vote: no secure sum %d in this job", k)
		}
		length = s.dim
	}
	agg, err := secagg.NewServer(secagg.Params{Clients: s.job.Clients, Threshold: s.job.Threshold, Length: length, Session: sumSession(s.session, k)})
	if err != nil {
		return nil, err
	}
	st := &sumState{agg: agg}
	s.sums[k] = st
	return st, nil
}

// sumPhase is the name of secure sum k's round.
func sumPhase(round string, k int) string { return fmt.Sprintf("%s/%d", round, k) }

func (s *Server) progress(e Event) {
	e.Live = len(s.live)
	if s.Progress != nil {
		s.Progress(e)
	}
}

// Join implements pb.VoteServer. A request for part i gets client ID i−1,
// and is refused if another client holds it; a request without a part gets
// the lowest free ID. Over mutual TLS the ID is the one the client's
// certificate binds, and a request for another part is refused. The reply
// carries the session's id and a fresh token that every later call of the
// client must carry (authorize).
func (s *Server) Join(req *pb.JoinRequest, stream pb.Vote_JoinServer) error {
	certID, certified, err := s.joinIdentity(stream.Context())
	if err != nil {
		return err
	}
	if certified {
		if p := int(req.GetPart()); p != 0 && p != certID+1 {
			return status.Errorf(codes.PermissionDenied, "vote: part %d asked for with the certificate of client %d (part %d)", p, certID, certID+1)
		}
		req = &pb.JoinRequest{Part: int32(certID + 1)}
	}
	s.mu.Lock()
	if s.joined >= s.job.Clients || s.closed {
		s.mu.Unlock()
		return fmt.Errorf("vote: all %d clients have joined", s.job.Clients)
	}
	id := 0
	switch p := int(req.GetPart()); {
	case p < 0 || p > s.job.Clients:
		s.mu.Unlock()
		return fmt.Errorf("vote: part %d of a split into %d", p, s.job.Clients)
	case p > 0 && s.taken[p-1]:
		s.mu.Unlock()
		return fmt.Errorf("vote: part %d has already joined", p)
	case p > 0:
		id = p - 1
	default:
		for s.taken[id] {
			id++
		}
	}
	tok, err := s.newTokenLocked(id)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	s.taken[id] = true
	s.joined++
	s.live[id] = true
	kick := make(chan struct{})
	if s.kicked != nil {
		s.kicked[id] = kick
	}
	s.progress(Event{Stage: "joined", Client: id})
	if s.joined == s.job.Clients {
		s.admitLocked()
	}
	s.mu.Unlock()
	defer s.drop(id)
	b, err := json.Marshal(s.job)
	if err != nil {
		return err
	}
	if err := stream.Send(&pb.Session{ClientId: int32(id), Job: b, SessionId: s.session, Token: tok}); err != nil {
		return err
	}
	select {
	case <-stream.Context().Done():
	case <-s.done:
	case <-kick:
	}
	return nil
}

// admitLocked marks admissions complete: the first round's deadline starts.
func (s *Server) admitLocked() {
	if s.admitted == nil {
		return
	}
	select {
	case <-s.admitted:
	default:
		close(s.admitted)
	}
}

// drop marks a client gone and closes any round that waited only for it.
func (s *Server) drop(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(id)
}

// dropLocked is drop under the lock.
func (s *Server) dropLocked(id int) {
	if !s.live[id] {
		return
	}
	delete(s.live, id)
	if s.finished {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	s.progress(Event{Stage: "dropped", Client: id})
	for _, p := range s.phases {
		s.tryClose(p)
	}
}

// phaseLocked returns the named phase, creating it with its closer.
func (s *Server) phaseLocked(name string, close func() error) *phase {
	p, ok := s.phases[name]
	if !ok {
		p = &phase{got: map[int]bool{}, closed: make(chan struct{}), close: close}
		s.phases[name] = p
	}
	if p.close == nil {
		p.close = close
	}
	return p
}

func (s *Server) tryClose(p *phase) {
	if p.close == nil {
		return // only waited on so far
	}
	select {
	case <-p.closed:
		return
	default:
	}
	for id := range s.live {
		if !p.got[id] {
			return
		}
	}
	if s.joined < s.job.Clients && !s.closed {
		return // clients still to join
	}
	p.err = p.close()
	close(p.closed)
	if p.err != nil && s.err == nil {
		s.err = p.err
		close(s.failed)
	}
}

// submit records client id's message for the named phase (add runs under
// the lock and may reject it), then waits for the phase to close. The
// phase and its closer are made only once add has accepted the message, so
// a refused message (a sum that does not exist, a round out of range)
// leaves no phase whose closer would run on state that was never made.
func (s *Server) submit(ctx context.Context, name string, id int, add func() error, close func() error) error {
	s.mu.Lock()
	if !s.live[id] {
		s.mu.Unlock()
		return fmt.Errorf("vote: client %d is not in the session", id)
	}
	if err := add(); err != nil {
		s.mu.Unlock()
		return err
	}
	p := s.phaseLocked(name, close)
	p.got[id] = true
	s.tryClose(p)
	s.mu.Unlock()
	select {
	case <-p.closed:
		return p.err
	case <-ctx.Done():
		return ctx.Err()
	case <-s.done:
		// Run returns as soon as the last phase closes, so both channels
		// may be ready: a closed phase's outcome wins over the shutdown.
		select {
		case <-p.closed:
			return p.err
		default:
			return ErrAborted
		}
	}
}

// AdvertiseKeys implements pb.VoteServer (secure summation round 0).
func (s *Server) AdvertiseKeys(ctx context.Context, m *pb.Keys) (*pb.KeyList, error) {
	if err := s.authorize(ctx, int(m.ClientId)); err != nil {
		return nil, err
	}
	k := int(m.Sum)
	if k != 0 && (s.job.Final.Mode != FinalDPFedAvg || k < 1 || k > s.job.Final.Rounds) {
		return nil, status.Errorf(codes.InvalidArgument, "vote: no secure sum %d in this job", k)
	}
	// A client whose keys are refused (a certificate other than its
	// connection's, keys repeated within the message or across U1, a bad
	// signature) is expelled, so the honest clients go on without it.
	certErr := s.checkAdvertisedCert(ctx, int(m.ClientId), m.Certificate)
	var st *sumState
	err := s.submit(ctx, sumPhase("keys", k), int(m.ClientId), func() (err error) {
		if certErr != nil {
			s.expelLocked(int(m.ClientId))
			return certErr
		}
		if st, err = s.sumLocked(k); err != nil {
			return err
		}
		if err := st.agg.AddKeys(secagg.Keys{ID: int(m.ClientId), EncryptKey: m.EncryptKey, MaskKey: m.MaskKey, Cert: m.Certificate, Sig: m.Signature}); err != nil {
			s.expelLocked(int(m.ClientId))
			return status.Error(codes.PermissionDenied, err.Error())
		}
		return nil
	}, func() (err error) {
		if st.u1, err = st.agg.CloseKeys(); err != nil {
			return fmt.Errorf("%w: %v", ErrAborted, err)
		}
		s.progress(Event{Stage: "keys", Round: k})
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := &pb.KeyList{}
	for _, k := range st.u1 {
		out.Keys = append(out.Keys, &pb.Keys{ClientId: int32(k.ID), EncryptKey: k.EncryptKey, MaskKey: k.MaskKey, Certificate: k.Cert, Signature: k.Sig, Sum: m.Sum})
	}
	return out, nil
}

// started returns secure sum k if round 0 of it has begun.
func (s *Server) started(k int) (*sumState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.sums[k]
	if !ok {
		return nil, fmt.Errorf("vote: secure sum %d has not started", k)
	}
	return st, nil
}

// ShareKeys implements pb.VoteServer (round 1).
func (s *Server) ShareKeys(ctx context.Context, m *pb.Shares) (*pb.Inbox, error) {
	if err := s.authorize(ctx, int(m.ClientId)); err != nil {
		return nil, err
	}
	id, k := int(m.ClientId), int(m.Sum)
	st, err := s.started(k)
	if err != nil {
		return nil, err
	}
	err = s.submit(ctx, sumPhase("shares", k), id, func() error {
		return st.agg.AddShares(secagg.Shares{From: id, Ciphertext: fromPB(m.Ciphertext), Commitment: m.Commitment})
	}, func() error {
		_, err := st.agg.CloseShares()
		s.progress(Event{Stage: "shares", Round: k})
		return err
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	in, err := st.agg.SharesFor(id)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &pb.Inbox{Ciphertext: toPB(in)}, nil
}

// MaskedInput implements pb.VoteServer (round 2). The round aborts if fewer
// than the mechanism's MinSurvivors sent their vectors.
func (s *Server) MaskedInput(ctx context.Context, m *pb.Masked) (*pb.Survivors, error) {
	if err := s.authorize(ctx, int(m.ClientId)); err != nil {
		return nil, err
	}
	k := int(m.Sum)
	st, err := s.started(k)
	if err != nil {
		return nil, err
	}
	err = s.submit(ctx, sumPhase("masked", k), int(m.ClientId), func() error {
		return st.agg.AddMasked(secagg.Masked{From: int(m.ClientId), Y: m.Y})
	}, func() (err error) {
		if st.u3, err = st.agg.CloseMasked(); err != nil {
			return fmt.Errorf("%w: %v", ErrAborted, err)
		}
		if len(st.u3) < s.job.Mechanism.MinSurvivors() {
			return fmt.Errorf("%w: %d noisy vectors arrived, the noise needs ⌈(1−f)n⌉ = %d", ErrAborted, len(st.u3), s.job.Mechanism.MinSurvivors())
		}
		if k == 0 {
			s.result.Survivors = slices.Clone(st.u3)
		} else {
			s.result.RoundSurvivors = append(s.result.RoundSurvivors, len(st.u3))
		}
		s.progress(Event{Stage: "masked", Round: k})
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := &pb.Survivors{}
	for _, id := range st.u3 {
		out.ClientIds = append(out.ClientIds, int32(id))
	}
	return out, nil
}

// Unmask implements pb.VoteServer (round 4): when the signers of U3 have
// answered, the server sums; for the vote it takes the argmax and announces
// it, for a FedAvg round it checks the sum is within what clipped updates
// allow (UpdateSum.CheckSum; else the round aborts), adds the survivors'
// mean update to the global model (UpdateSum.Decode) and returns the model.
func (s *Server) Unmask(ctx context.Context, m *pb.UnmaskShares) (*pb.Outcome, error) {
	if err := s.authorize(ctx, int(m.ClientId)); err != nil {
		return nil, err
	}
	id, k := int(m.ClientId), int(m.Sum)
	st, err := s.started(k)
	if err != nil {
		return nil, err
	}
	name := sumPhase("unmask", k)
	err = s.submit(ctx, name, id, func() error {
		return st.agg.AddUnmask(secagg.Unmask{From: id, SelfMask: fromPB(m.SelfMask), MaskKeys: fromPB(m.MaskKeys)})
	}, func() error {
		sum, err := st.agg.Sum()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrAborted, err)
		}
		if k == 0 {
			// A coordinate outside what honest votes and noise reach is a
			// hostile vector (or a wrap): no argmax of it is released.
			if err := s.job.Mechanism.CheckSum(sum); err != nil {
				return fmt.Errorf("%w: %v", ErrAborted, err)
			}
			s.result.Winner = Winner(sum)
			s.result.Answered = len(s.phases[name].got)
			s.progress(Event{Stage: "winner", Winner: s.result.Winner})
			return nil
		}
		upd := s.job.Updates(s.dim)
		if err := upd.CheckSum(sum, len(st.u3)); err != nil {
			return fmt.Errorf("%w: %v", ErrAborted, err)
		}
		mean := upd.Decode(sum, len(st.u3))
		g := slices.Clone(s.global)
		for i, v := range mean {
			g[i] += float32(v)
		}
		s.global = g
		s.finished = k == s.job.Final.Rounds
		s.progress(Event{Stage: "round", Round: k})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if k == 0 {
		return &pb.Outcome{Winner: int32(s.result.Winner)}, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &pb.Outcome{Winner: int32(s.result.Winner), Values: s.global}, nil
}

// Update implements pb.VoteServer: one FedAvg round. The new global model
// is the plain average of the parameters the live clients sent, each
// client's update clipped to MaxModelUpdate (a non-finite one counts as
// zero).
func (s *Server) Update(ctx context.Context, m *pb.Params) (*pb.Params, error) {
	if err := s.authorize(ctx, int(m.ClientId)); err != nil {
		return nil, err
	}
	id, r := int(m.ClientId), int(m.Round)
	if s.job.Final.Mode == FinalDPFedAvg {
		return nil, status.Errorf(codes.InvalidArgument, "vote: with %s, updates go through the secure sum", FinalDPFedAvg)
	}
	if r < 0 || r >= s.job.Final.Rounds {
		return nil, status.Errorf(codes.InvalidArgument, "vote: FedAvg round %d of %d", r, s.job.Final.Rounds)
	}
	name := fmt.Sprintf("round-%d", r)
	err := s.submit(ctx, name, id, func() error {
		if cur := s.currentRoundLocked(); r != cur {
			return status.Errorf(codes.FailedPrecondition, "vote: client %d sent an update for FedAvg round %d during round %d", id, r, cur)
		}
		if len(m.Values) != len(s.global) {
			return fmt.Errorf("vote: client %d sent %d parameters", id, len(m.Values))
		}
		if s.updates[r] == nil {
			s.updates[r] = map[int][]float32{}
		}
		s.updates[r][id] = clipModel(m.Values, s.global, MaxModelUpdate)
		return nil
	}, func() error {
		var err error
		if s.global, err = average(slices.Collect(maps.Values(s.updates[r]))); err != nil {
			return err
		}
		delete(s.updates, r)
		s.finished = r+1 == s.job.Final.Rounds
		s.progress(Event{Stage: "round", Round: r + 1})
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return &pb.Params{Round: int32(r), Values: s.global}, nil
}

// Wait blocks until the last FedAvg round closed (or a round aborted, or
// ctx ended) and returns the outcome; it then ends every client's session.
// It keeps each round's deadline (TrainingTimeout, MessageTimeout). On an
// error the outcome holds what had been decided so far (Survivors once the
// vote's noisy vectors were in, RoundSurvivors of the FedAvg sums that
// had started unmasking), without Params, so the curator can account for
// what reached the clients; the error wraps ErrAborted when a round ended
// without a release.
func (s *Server) Wait(ctx context.Context) (Outcome, error) {
	defer close(s.done)
	if s.JoinTimeout > 0 {
		t := time.AfterFunc(s.JoinTimeout, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.closed = true
			s.admitLocked()
			// Too few joined for the noise: abort now rather than at the
			// first round's deadline.
			if n := s.job.Mechanism.MinSurvivors(); s.joined < n && s.err == nil {
				s.err = fmt.Errorf("%w: %d of %d clients joined before admissions closed, the noise needs ⌈(1−f)n⌉ = %d", ErrAborted, s.joined, s.job.Clients, n)
				close(s.failed)
				return
			}
			for _, p := range s.phases {
				s.tryClose(p)
			}
		})
		defer t.Stop()
	}
	admitted := s.admitted
	for i, name := range s.job.phases() {
		s.mu.Lock()
		p := s.phaseLocked(name, nil)
		s.mu.Unlock()
		// The round's deadline runs from the close of the round before; the
		// first round's, from the last admission.
		var timer *time.Timer
		var deadline <-chan time.Time
		start := func() {
			if d := s.timeout(name); d > 0 {
				timer = time.NewTimer(d)
				deadline = timer.C
			}
		}
		if i == 0 {
			if admitted == nil {
				start()
			}
		} else {
			admitted = nil
			start()
		}
		for wait := true; wait; {
			select {
			case <-p.closed:
				if p.err != nil {
					return s.partial(), p.err
				}
				wait = false
			case <-s.failed:
				return s.partial(), s.err
			case <-admitted:
				admitted = nil
				start()
			case <-deadline:
				deadline = nil
				s.expire(p, name)
			case <-ctx.Done():
				// A phase that closed as ctx ended has reached the clients:
				// go on, so that what they were told is accounted for.
				select {
				case <-p.closed:
					if p.err != nil {
						return s.partial(), p.err
					}
					wait = false
				default:
					return s.partial(), ctx.Err()
				}
			}
		}
		if timer != nil {
			timer.Stop()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.result.Params = s.global
	return s.result, nil
}

// partial is the outcome decided so far, without a model.
func (s *Server) partial() Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.result
	out.Survivors = slices.Clone(out.Survivors)
	out.RoundSurvivors = slices.Clone(out.RoundSurvivors)
	return out
}

func fromPB(m map[int32][]byte) map[int][]byte {
	out := make(map[int][]byte, len(m))
	for k, v := range m {
		out[int(k)] = v
	}
	return out
}

func toPB(m map[int][]byte) map[int32][]byte {
	out := make(map[int32][]byte, len(m))
	for k, v := range m {
		out[int32(k)] = v
	}
	return out
}
