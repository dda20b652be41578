package federated

import (
	"context"
	"errors"
	"gonum.org/v1/gonum/stat/distuv"
	"math"
	"math/rand/v2"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/dptune/dptune/data"
	pb "github.com/dptune/dptune/federated/votepb"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning/space"
)

func TestTopVotes(t *testing.T) {
	got := TopVotes([]float64{0.5, math.NaN(), 0.9, 0.5, 0.9}, 3)
	// 0.9 at 2 and 4, then the tie at 0.5 goes to the lower index 0.
	if want := []int64{1, 0, 1, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("TopVotes = %v, want %v", got, want)
	}
}

func TestWinnerReadsSigned(t *testing.T) {
	neg := int64(-5)
	if w := Winner([]uint64{uint64(neg), 3, 2}); w != 1 {
		t.Errorf("winner of (−5, 3, 2) = %d", w)
	}
}

// TestNoisyShareMoments: each coordinate of a share is S·v plus noise of
// variance LocalStddev² (checked to 5% over 20,000 draws).
func TestNoisyShareMoments(t *testing.T) {
	m := Mechanism{Clients: 8, Candidates: 2, VotesPerClient: 1, NoiseStddev: 2, Scale: 4, Dropout: 0.5}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var s1, s2 float64
	const n = 20000
	for range n {
		sh, err := m.NoisyShare([]int64{0, 1}, rng)
		if err != nil {
			t.Fatal(err)
		}
		x := float64(int64(sh[1]) - 4)
		s1 += x
		s2 += x * x
	}
	want := m.LocalStddev() * m.LocalStddev() // (4·2/√4)² = 16
	if v := s2/n - (s1/n)*(s1/n); math.Abs(v-want) > 0.05*want || math.Abs(s1/n) > 0.1 {
		t.Errorf("noise mean %.3f variance %.3f, want 0 and %.3f", s1/n, v, want)
	}
}

// TestCalibrateMatchesGaussian: with the default scale τ underflows, so the
// calibrated σ equals the continuous Gaussian vote's (the Vote event, a
// different code path) to the calibration's tolerance.
func TestCalibrateMatchesGaussian(t *testing.T) {
	m := Mechanism{Clients: 10, Candidates: 24, VotesPerClient: 3, Scale: DefaultScale}
	got, err := Calibrate(context.Background(), m, 1, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	want, err := accounting.CalibrateNoise(context.Background(), accounting.RDP{}, func(s float64) accounting.Event {
		return accounting.Vote{NoiseStddev: s, VotesPerClient: 3}
	}, 1, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.NoiseStddev-want) > 1e-5*want {
		t.Errorf("σ = %v, the Gaussian vote's is %v", got.NoiseStddev, want)
	}
	if tau := got.Event(got.MinSurvivors()).Tau(); tau != 0 {
		t.Errorf("τ = %v at the default scale", tau)
	}
}

func TestMechanismCheck(t *testing.T) {
	good := Mechanism{Clients: 4, Candidates: 3, VotesPerClient: 1, NoiseStddev: 1, Scale: 16}
	for _, bad := range []func(*Mechanism){
		func(m *Mechanism) { m.Clients = 1 },
		func(m *Mechanism) { m.VotesPerClient = 4 },
		func(m *Mechanism) { m.NoiseStddev = 0 },
		func(m *Mechanism) { m.Scale = 0 },
		func(m *Mechanism) { m.Dropout = 1 },
		func(m *Mechanism) { m.Dropout = 0.8 }, // ⌈0.8⌉ = 1 survivor: no sum
		func(m *Mechanism) { m.Scale = 1; m.NoiseStddev = 0.1 },
	} {
		m := good
		bad(&m)
		if err := m.Check(); err == nil {
			t.Errorf("%+v: no error", m)
		}
	}
	if err := good.Check(); err != nil {
		t.Error(err)
	}
}

// toyData is a two-class problem a linear model learns in one epoch at a
// learning rate of 0.3 and not at all at 1e-4.
func toyData(n int) *data.Dataset {
	r := rand.New(rand.NewPCG(9, 9))
	d := &data.Dataset{Name: "toy", X: make([]float32, n*16), Y: make([]uint8, n), N: n, C: 1, H: 4, W: 4, Classes: 2}
	for i := range n {
		y := i % 2
		d.Y[i] = uint8(y)
		for j := range 16 {
			sign := float32(1)
			if (j%2 == 0) != (y == 0) {
				sign = -1
			}
			d.X[i*16+j] = sign*0.5 + float32(r.NormFloat64())*0.3
		}
	}
	return d
}

func toyJob(t *testing.T, clients int, dropout float64) Job {
	t.Helper()
	spec, err := model.ParseSpec(strings.NewReader(`{"name": "toy", "layers": [{"type": "flatten"}, {"type": "linear", "out": 2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	arch, err := model.NewArch(spec, 1, 4, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	grid := space.Space{Name: "toy", Dims: []space.Dim{{Name: LearningRate, Values: []float64{1e-4, 0.3}}}}
	m := Mechanism{Clients: clients, Candidates: 2, VotesPerClient: 1, NoiseStddev: 0.5, Scale: DefaultScale, Dropout: dropout}
	return Job{Dataset: "toy", Arch: arch, Space: grid, Clients: clients, SplitSeed: 3, NominalN: 800, HeldOut: 0.25,
		LocalEpochs: 1, LocalBatchSize: 16, InitSeed: 5, Mechanism: m, Threshold: Threshold(clients, 0),
		Final: Final{Mode: FinalDPSGD, Rounds: 2, StepsPerRound: 5, SamplingRate: 0.1, NoiseMultiplier: 1, ClipNorm: 1}}
}

// serveInMemory serves srv over an in-memory listener until the test ends
// and returns a function that opens a client connection to it (closed when
// the test ends); call it from the test's goroutine.
func serveInMemory(t *testing.T, srv *Server) func() *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer()
	pb.RegisterVoteServer(g, srv)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return func() *grpc.ClientConn {
		conn, err := grpc.NewClient("passthrough:///bufnet", grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return lis.DialContext(ctx)
		}), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
}

// session runs a server and clients over an in-memory gRPC connection.
// dropAt, if ≥ 0, is the client (by join order) that leaves once it has
// scored its candidates: after round 1, before sending its vote. With
// parts, client i joins as part i+1 with seed 100 + i·2^40 (Job.FedAvg's
// per-client seeds for seed 100); otherwise it takes the next free ID.
func session(t *testing.T, job Job, dropAt int, parts bool) (Outcome, error, []ClientReport) {
	t.Helper()
	srv, err := NewServer(job)
	if err != nil {
		t.Fatal(err)
	}
	dial := serveInMemory(t, srv)
	d := toyData(job.NominalN)
	var wg sync.WaitGroup
	reports := make([]ClientReport, job.Clients)
	var joinMu sync.Mutex
	joined := 0
	for i := range job.Clients {
		conn := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seed := uint64(100 + i)
			c := &Client{Load: func(Job) (*data.Dataset, error) { return d, nil }, Seed: &seed}
			if parts {
				seed = 100 + uint64(i)<<40
				c.Part, c.Parts = i+1, job.Clients
			}
			joinMu.Lock()
			me := joined
			joined++
			joinMu.Unlock()
			if me == dropAt {
				c.Progress = func(stage string, done, total int) {
					if stage == "candidates" && done == total {
						cancel()
					}
				}
			}
			reports[i], _ = c.Run(ctx, pb.NewVoteClient(conn))
		}()
	}
	out, err := srv.Wait(context.Background())
	wg.Wait()
	return out, err, reports
}

func TestVoteEndToEnd(t *testing.T) {
	out, err, reports := session(t, toyJob(t, 4, 0), -1, false)
	if err != nil {
		t.Fatal(err)
	}
	if out.Winner != 1 || !slices.Equal(out.Survivors, []int{0, 1, 2, 3}) || out.Answered != 4 {
		t.Fatalf("outcome %+v, want candidate 1 (η = 0.3) from all four clients", out)
	}
	for _, r := range reports {
		if r.Winner != 1 {
			t.Errorf("client %d heard winner %d", r.ID, r.Winner)
		}
	}
	if len(out.Params) != 34 {
		t.Errorf("final model has %d parameters, want 34", len(out.Params))
	}
}

// TestVoteDropout: a client leaves after round 1. With f = 1/4 the other
// three carry the full noise and the round completes without it; with
// f = 0 it aborts and releases nothing.
func TestVoteDropout(t *testing.T) {
	out, err, _ := session(t, toyJob(t, 4, 0.25), 2, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Survivors) != 3 || out.Winner != 1 {
		t.Errorf("outcome %+v, want three survivors", out)
	}
	out, err, _ = session(t, toyJob(t, 4, 0), 2, false)
	if !errors.Is(err, ErrAborted) {
		t.Errorf("f = 0 with a dropout: %+v, %v; want ErrAborted", out, err)
	}
}

// Theorem V.1 with one good and one bad candidate is exact: the good one
// wins iff Z_b − Z_g < Δ, probability Φ(Δ/(√2σ)); with more bad candidates
// a Monte Carlo estimate of the argmax's success never falls below it.
func TestGoodSelectionBound(t *testing.T) {
	sigma := 3.0
	if got, want := GoodSelectionBound([]float64{10, 6}, []bool{true, false}, sigma), 0.5*math.Erfc(-4/(math.Sqrt2*sigma*math.Sqrt2)); math.Abs(got-want) > 1e-12 {
		t.Fatalf("two candidates: bound %v, want Φ(Δ/(√2σ)) = %v", got, want)
	}
	if GoodSelectionBound([]float64{1, 2}, []bool{true, true}, sigma) != 1 || GoodSelectionBound([]float64{1, 2}, []bool{false, false}, sigma) != 0 {
		t.Fatal("all good must give 1, none good 0")
	}
	counts := []float64{20, 18, 9, 7, 5, 3, 2, 0}
	good := []bool{true, true, false, false, false, false, false, false}
	bound := GoodSelectionBound(counts, good, sigma)
	r := rand.New(rand.NewPCG(4, 4))
	const trials = 200000
	wins := 0
	for range trials {
		best, arg := math.Inf(-1), 0
		for i, c := range counts {
			if v := c + sigma*r.NormFloat64(); v > best {
				best, arg = v, i
			}
		}
		if good[arg] {
			wins++
		}
	}
	p := float64(wins) / trials
	if bound < 0.5 || p < bound-3*math.Sqrt(p*(1-p)/trials) {
		t.Fatalf("bound %v, simulated success %v", bound, p)
	}
}

// TestJoinByPart: a client asking for part i gets client ID i−1; a second
// client asking for the same part, or for a part beyond the split, is
// refused; a client without a part gets the lowest free ID; a client that
// expects another number of parts refuses the job.
func TestJoinByPart(t *testing.T) {
	srv, err := NewServer(toyJob(t, 3, 0))
	if err != nil {
		t.Fatal(err)
	}
	conn := serveInMemory(t, srv)()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	join := func(part int) (int, error) {
		stream, err := pb.NewVoteClient(conn).Join(ctx, &pb.JoinRequest{Part: int32(part)})
		if err != nil {
			return -1, err
		}
		s, err := stream.Recv()
		if err != nil {
			return -1, err
		}
		return int(s.ClientId), nil
	}
	if id, err := join(2); id != 1 || err != nil {
		t.Errorf("part 2: ID %d, %v; want 1", id, err)
	}
	if _, err := join(2); err == nil {
		t.Error("part 2 joined twice")
	}
	if _, err := join(4); err == nil {
		t.Error("part 4 of 3 joined")
	}
	if id, err := join(0); id != 0 || err != nil {
		t.Errorf("no part: ID %d, %v; want 0", id, err)
	}
	c := &Client{Part: 3, Parts: 5, Load: func(Job) (*data.Dataset, error) { return toyData(800), nil }}
	if _, err := c.Run(ctx, pb.NewVoteClient(conn)); err == nil || !strings.Contains(err.Error(), "3 clients") {
		t.Errorf("a client of 5 parts in a job of 3: %v", err)
	}
}

// A client whose last phase closed gets that phase's outcome even when the
// server has already shut down (Wait returns as soon as the last phase
// closes), never ErrAborted: both channels are ready, and a plain select
// would pick either.
func TestClosedPhaseWinsOverShutdown(t *testing.T) {
	s := &Server{live: map[int]bool{1: true}, phases: map[string]*phase{}, done: make(chan struct{})}
	p := s.phaseLocked("last", func() error { return nil })
	close(p.closed)
	close(s.done)
	for range 200 {
		if err := s.submit(context.Background(), "last", 1, func() error { return nil }, nil); err != nil {
			t.Fatalf("submit after the last phase closed: %v", err)
		}
	}
}

// Wait returns the outcome when every phase has closed even if ctx ended at
// the same moment: the clients have been told the result, so the curator
// must account for it rather than report a cancellation.
func TestClosedPhasesWinOverCancelledWait(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		s := &Server{job: Job{Final: Final{Rounds: 1}}, phases: map[string]*phase{}, done: make(chan struct{}), failed: make(chan struct{}),
			result: Outcome{Winner: 3}}
		for _, name := range s.job.phases() {
			close(s.phaseLocked(name, nil).closed)
		}
		if out, err := s.Wait(ctx); err != nil || out.Winner != 3 {
			t.Fatalf("Wait after every phase closed: winner %d, error %v", out.Winner, err)
		}
	}
}

// BestCaseGoodSelection is Theorem V.1 at Δ = n and |B| = d − ℓ:
// 1 − (d − ℓ)·Φ(−n/(√2σ)), here from gonum's normal CDF.
func TestBestCaseGoodSelection(t *testing.T) {
	for _, c := range []struct {
		n, d, l int
		sigma   float64
	}{{10, 32, 3, 9.9}, {50, 32, 3, 9.9}, {10, 8, 1, 3}, {10, 8, 8, 3}, {20, 16, 2, 6}} {
		m := Mechanism{Clients: c.n, Candidates: c.d, VotesPerClient: c.l, NoiseStddev: c.sigma}
		want := 1 - float64(c.d-c.l)*distuv.UnitNormal.CDF(-float64(c.n)/(math.Sqrt2*c.sigma))
		want = math.Max(0, math.Min(1, want))
		if got := m.BestCaseGoodSelection(); math.Abs(got-want) > 1e-12 {
			t.Errorf("%+v: %v, want %v", c, got, want)
		}
	}
}
