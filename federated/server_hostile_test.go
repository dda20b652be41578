package federated

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dptune/dptune/data"
	pb "github.com/dptune/dptune/federated/votepb"
)

// joinRaw joins n clients to srv over raw gRPC (no protocol after Join) and
// returns their stubs and contexts carrying their tokens; the Join streams
// end with the test.
func joinRaw(t *testing.T, srv *Server, n int) ([]pb.VoteClient, []context.Context) {
	t.Helper()
	dial := serveInMemory(t, srv)
	var cls []pb.VoteClient
	var ctxs []context.Context
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		c := pb.NewVoteClient(dial())
		st, err := c.Join(ctx, &pb.JoinRequest{Part: int32(i + 1)})
		if err != nil {
			t.Fatal(err)
		}
		s, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		cls = append(cls, c)
		ctxs = append(ctxs, metadata.AppendToOutgoingContext(context.Background(), TokenKey, hex.EncodeToString(s.Token)))
	}
	return cls, ctxs
}

// A round-0 message for a secure sum that does not exist is refused and
// leaves no phase: before, its closer ran on a nil sum when the last live
// client left, and the panic killed the server.
func TestAdvertiseKeysForAMissingSum(t *testing.T) {
	srv, err := NewServer(toyJob(t, 2, 0))
	if err != nil {
		t.Fatal(err)
	}
	cls, ctxs := joinRaw(t, srv, 2)
	if _, err := cls[0].AdvertiseKeys(ctxs[0], &pb.Keys{ClientId: 0, Sum: 7}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("sum 7: %v, want InvalidArgument", err)
	}
	srv.mu.Lock()
	_, ok := srv.phases[sumPhase("keys", 7)]
	srv.mu.Unlock()
	if ok {
		t.Error("a refused message left phase keys/7")
	}
	srv.drop(0)
	srv.drop(1) // every live client gone: each phase's closer runs
}

// A plain FedAvg update is accepted for the open round only: one sent for
// round 1 during the vote is refused at once.
func TestUpdateForAnotherRound(t *testing.T) {
	job := toyJob(t, 2, 0)
	srv, err := NewServer(job)
	if err != nil {
		t.Fatal(err)
	}
	cls, ctxs := joinRaw(t, srv, 2)
	ctx, cancel := context.WithTimeout(ctxs[0], 5*time.Second)
	defer cancel()
	_, err = cls[0].Update(ctx, &pb.Params{ClientId: 0, Round: 1, Values: make([]float32, srv.dim)})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("round 1 during the vote: %v, want FailedPrecondition", err)
	}
	srv.mu.Lock()
	n := len(srv.updates)
	srv.mu.Unlock()
	if n != 0 {
		t.Errorf("the server kept %d rounds of updates", n)
	}
}

// A client that never joins does not stall the run: admissions close at
// JoinTimeout, and the vote goes on with the clients that joined if they
// are ⌈(1−f)n⌉ or more; else the run aborts at once.
func TestJoinTimeout(t *testing.T) {
	for _, c := range []struct {
		joining int
		ok      bool
	}{{2, true}, {1, false}} {
		job := toyJob(t, 3, 1.0/3) // ⌈(1−f)n⌉ = 2 = t
		srv, err := NewServer(job)
		if err != nil {
			t.Fatal(err)
		}
		// Admissions close as Wait starts, once the joining clients are in.
		srv.JoinTimeout = time.Nanosecond
		joined := make(chan struct{}, 3)
		srv.Progress = func(e Event) {
			if e.Stage == "joined" {
				joined <- struct{}{}
			}
		}
		dial := serveInMemory(t, srv)
		d := toyData(job.NominalN)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var wg sync.WaitGroup
		for i := range c.joining {
			conn := dial()
			wg.Add(1)
			go func() {
				defer wg.Done()
				seed := uint64(100 + i)
				cl := &Client{Load: func(Job) (*data.Dataset, error) { return d, nil }, Seed: &seed, Part: i + 1, Parts: 3}
				cl.Run(ctx, pb.NewVoteClient(conn))
			}()
		}
		for range c.joining {
			<-joined
		}
		out, err := srv.Wait(ctx)
		cancel()
		wg.Wait()
		switch {
		case c.ok && (err != nil || len(out.Survivors) != 2):
			t.Errorf("%d of 3 joined: %v, survivors %v; want the vote of both", c.joining, err, out.Survivors)
		case !c.ok && !errors.Is(err, ErrAborted):
			t.Errorf("%d of 3 joined: %v, want an abort", c.joining, err)
		}
	}
}
