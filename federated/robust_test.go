package federated

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/dptune/dptune/data"
	pb "github.com/dptune/dptune/federated/votepb"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// hostile is a connection whose client corrupts what it sends: update
// rewrites its FedAvg parameters, masked its secure-sum input, and silent
// makes it stop answering (until its context ends) from the named secure
// sum's round 0, or from the FedAvg rounds if silentRound is −1.
type hostile struct {
	pb.VoteClient
	update      func([]float32)
	masked      func(k int, y []uint64)
	silent      bool
	silentRound int
}

func (h hostile) Update(ctx context.Context, m *pb.Params, opts ...grpc.CallOption) (*pb.Params, error) {
	if h.silent && h.silentRound == -1 {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if h.update != nil {
		m.Values = slices.Clone(m.Values)
		h.update(m.Values)
	}
	return h.VoteClient.Update(ctx, m, opts...)
}

func (h hostile) AdvertiseKeys(ctx context.Context, m *pb.Keys, opts ...grpc.CallOption) (*pb.KeyList, error) {
	if h.silent && int(m.Sum) == h.silentRound {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h.VoteClient.AdvertiseKeys(ctx, m, opts...)
}

func (h hostile) MaskedInput(ctx context.Context, m *pb.Masked, opts ...grpc.CallOption) (*pb.Survivors, error) {
	if h.masked != nil {
		m.Y = slices.Clone(m.Y)
		h.masked(int(m.Sum), m.Y)
	}
	return h.VoteClient.MaskedInput(ctx, m, opts...)
}

// hostileSession runs srv with len(conns) clients of the toy data, client
// i talking through wrap(i, conn); it returns Wait's outcome and the
// server's events.
func hostileSession(t *testing.T, srv *Server, clients int, wrap func(int, pb.VoteClient) pb.VoteClient) (Outcome, error, []Event) {
	t.Helper()
	var mu sync.Mutex
	var events []Event
	srv.Progress = func(e Event) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	}
	dial := serveInMemory(t, srv)
	d := toyData(srv.job.NominalN)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range clients {
		conn := wrap(i, pb.NewVoteClient(dial()))
		wg.Add(1)
		go func() {
			defer wg.Done()
			seed := uint64(100 + i)
			c := &Client{Load: func(Job) (*data.Dataset, error) { return d, nil }, Seed: &seed, Part: i + 1, Parts: clients}
			c.Run(ctx, conn)
		}()
	}
	wctx, wcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer wcancel()
	out, err := srv.Wait(wctx)
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return out, err, slices.Clone(events)
}

// clipModel's closed forms: a non-finite model counts as the global one;
// an update of norm above the bound is scaled onto it; one within it is
// kept.
func TestClipModel(t *testing.T) {
	global := []float32{1, 2, 3}
	if got := clipModel([]float32{1, float32(math.NaN()), 3}, global, 10); !slices.Equal(got, global) {
		t.Errorf("NaN: %v, want the global model", got)
	}
	if got := clipModel([]float32{1, float32(math.Inf(-1)), 3}, global, 10); !slices.Equal(got, global) {
		t.Errorf("−Inf: %v, want the global model", got)
	}
	if got := clipModel([]float32{3e38, 2, 3}, global, 10); !slices.Equal(got, []float32{11, 2, 3}) {
		t.Errorf("3e38: %v, want [11 2 3]", got)
	}
	if got := clipModel([]float32{4, 6, 3}, global, 10); !slices.Equal(got, []float32{4, 6, 3}) {
		t.Errorf("an update of norm 5: %v, want it kept", got)
	}
}

// A FedAvg client that sends NaN and one that sends 3e38 (W1): the server
// counts the first as a zero update and clips the second, so the model is
// finite and moved by at most MaxModelUpdate per round. Before, the
// released model was all NaN.
func TestFedAvgRefusesNonFiniteAndHugeUpdates(t *testing.T) {
	job := toyJob(t, 4, 0)
	job.Final.Mode = FinalNonPrivate
	srv, err := NewServer(job)
	if err != nil {
		t.Fatal(err)
	}
	out, err, _ := hostileSession(t, srv, 4, func(i int, c pb.VoteClient) pb.VoteClient {
		switch i {
		case 0:
			return hostile{VoteClient: c, update: func(v []float32) {
				for k := range v {
					v[k] = float32(math.NaN())
				}
			}}
		case 1:
			return hostile{VoteClient: c, update: func(v []float32) { v[0] = 3e38 }}
		}
		return c
	})
	if err != nil {
		t.Fatal(err)
	}
	init, err := model.New(job.Arch, randsrc.New(&job.InitSeed, "init"))
	if err != nil {
		t.Fatal(err)
	}
	moved := 0.0
	for i, p := range out.Params {
		if math.IsNaN(float64(p)) || math.IsInf(float64(p), 0) {
			t.Fatalf("parameter %d is %v", i, p)
		}
		d := float64(p - init.Params[i])
		moved += d * d
	}
	if m := math.Sqrt(moved); m > float64(job.Final.Rounds)*MaxModelUpdate || m < MaxModelUpdate/4 {
		t.Errorf("the model moved by %v; with the 3e38 client clipped, want [%v, %v]", m, MaxModelUpdate/4, float64(job.Final.Rounds)*MaxModelUpdate)
	}
}

// UpdateSum.CheckSum: the sum of honest encodings passes; one a hostile
// client has pushed past SumBound fails.
func TestCheckSum(t *testing.T) {
	u := UpdateSum{Clients: 4, Dimension: 50, ClipNorm: 1, NoiseMultiplier: 1, Scale: 64, Dropout: 0}
	if err := u.Check(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	sum := make([]uint64, u.Dimension)
	for range u.Clients {
		upd := make([]float32, u.Dimension)
		for k := range upd {
			upd[k] = float32(rng.NormFloat64())
		}
		x, err := u.Encode(upd, rng)
		if err != nil {
			t.Fatal(err)
		}
		for k, w := range x {
			sum[k] += w
		}
	}
	if err := u.CheckSum(sum, u.Clients); err != nil {
		t.Fatalf("honest sum: %v", err)
	}
	// The honest sum's norm is below the bound (just checked), so moving one
	// coordinate by twice the bound leaves a norm above it.
	sum[7] += uint64(int64(2 * u.SumBound(u.Clients)))
	if err := u.CheckSum(sum, u.Clients); err == nil {
		t.Fatal("a sum beyond the bound passed")
	}
}

// Under secure summation a client that adds 2^50 to its masked input makes
// the decoded sum leave the range clipped updates allow: the round aborts
// and nothing is released (before, the model moved by 2^50/(S·n)).
func TestDPFedAvgRefusesOutOfRangeSum(t *testing.T) {
	job := toyJob(t, 4, 0)
	job.Final.Mode, job.Final.ClipNorm, job.Final.NoiseMultiplier = FinalDPFedAvg, 0.5, 0.05
	job.Final.Scale = DefaultUpdateScale(34, job.Final.ClipNorm)
	srv, err := NewServer(job)
	if err != nil {
		t.Fatal(err)
	}
	out, err, _ := hostileSession(t, srv, 4, func(i int, c pb.VoteClient) pb.VoteClient {
		if i != 2 {
			return c
		}
		return hostile{VoteClient: c, masked: func(k int, y []uint64) {
			if k > 0 {
				y[0] += 1 << 50
			}
		}}
	})
	if !errors.Is(err, ErrAborted) || out.Params != nil {
		t.Fatalf("outcome %+v, error %v; want ErrAborted and no model", out, err)
	}
}

// H6: a client that joins and then stays silent is dropped at the round's
// deadline; with f = 0.34 of 3 clients the other two carry the vote and
// the training. With f = 0 a client silent from the first FedAvg sum on
// aborts that round: nothing more is released, and the outcome still holds
// the vote's survivors for the ledger. Before, the round waited forever
// (here: until the test's 20 s context ended).
func TestSilentClientMissesTheDeadline(t *testing.T) {
	job := toyJob(t, 3, 0.34)
	srv, err := NewServer(job)
	if err != nil {
		t.Fatal(err)
	}
	srv.TrainingTimeout, srv.MessageTimeout = 2*time.Second, 2*time.Second
	out, err, events := hostileSession(t, srv, 3, func(i int, c pb.VoteClient) pb.VoteClient {
		if i == 1 {
			return hostile{VoteClient: c, silent: true, silentRound: 0}
		}
		return c
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Survivors, []int{0, 2}) || len(out.Params) != 34 {
		t.Errorf("survivors %v, %d parameters; want [0 2] and a model", out.Survivors, len(out.Params))
	}
	if !slices.ContainsFunc(events, func(e Event) bool { return e.Stage == "dropped" && e.Client == 1 }) {
		t.Error("client 1 was not reported dropped")
	}

	job = toyJob(t, 3, 0)
	job.Final.Mode, job.Final.ClipNorm, job.Final.NoiseMultiplier = FinalDPFedAvg, 0.5, 0.05
	job.Final.Scale = DefaultUpdateScale(34, job.Final.ClipNorm)
	if srv, err = NewServer(job); err != nil {
		t.Fatal(err)
	}
	srv.TrainingTimeout, srv.MessageTimeout = 2*time.Second, 2*time.Second
	out, err, _ = hostileSession(t, srv, 3, func(i int, c pb.VoteClient) pb.VoteClient {
		if i == 0 {
			return hostile{VoteClient: c, silent: true, silentRound: 1}
		}
		return c
	})
	if !errors.Is(err, ErrAborted) || out.Params != nil || !slices.Equal(out.Survivors, []int{0, 1, 2}) || len(out.RoundSurvivors) != 0 {
		t.Fatalf("outcome %+v, error %v; want ErrAborted after the vote of [0 1 2]", out, err)
	}
}
