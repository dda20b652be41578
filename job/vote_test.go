package job

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// toyVote is a vote of 2 clients over two learning rates of a linear model
// on 400 noise images of 4×4 pixels, trained in one FedAvg round.
func toyVote(t *testing.T) VoteSpec {
	t.Helper()
	spec, err := model.ParseSpec(strings.NewReader(`{"name": "lin", "layers": [{"type": "flatten"}, {"type": "linear", "out": 10}]}`))
	if err != nil {
		t.Fatal(err)
	}
	arch, err := model.NewArch(spec, 1, 4, 4, 10)
	if err != nil {
		t.Fatal(err)
	}
	train, test := noiseImages(400, 1), noiseImages(50, 2)
	src := Source{Name: "noise", Arch: arch, NominalN: 400, Load: func() (*data.Dataset, *data.Dataset, error) { return train, test, nil }}
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: federated.LearningRate, Values: []float64{1e-3, 0.1}}}}
	return VoteSpec{Data: src, Space: space, Epsilon: 20, Delta: 1e-5, VoteEpsilon: 5, Clients: 2, VotesPerClient: 1,
		LocalEpochs: 1, BatchSize: 32, FinalTraining: federated.FinalDPSGD, Rounds: 1, ClipNorm: 1, Seed: 7,
		Transport: VoteTransport{Insecure: true}}
}

// runToyVote runs s on loopback with an idle TCP connection (one that never
// speaks gRPC) opened before the clients, which run in this process; stop,
// if set, is called with each server event and may cancel the run (which
// also cancels the clients, so no later round can close). It
// returns RunVote's result and how long RunVote took after the last event.
func runToyVote(t *testing.T, s VoteSpec, stop func(federated.Event, context.CancelFunc)) (*Release, error, time.Duration) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	idle, err := net.Dial("tcp", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cctx, ccancel := context.WithCancel(context.Background())
	defer ccancel()
	var mu sync.Mutex
	var last time.Time
	s.Progress = func(e federated.Event) {
		mu.Lock()
		last = time.Now()
		mu.Unlock()
		if stop != nil {
			stop(e, func() { ccancel(); cancel() })
		}
	}
	var wg sync.WaitGroup
	for range s.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			VoteClient(cctx, lis.Addr().String(), s.Transport, s.Data, 0, 0, federated.Limits{MaxEpsilon: s.Epsilon, MaxDelta: s.Delta, Colluding: s.Colluding}, nil)
		}()
	}
	type result struct {
		rel *Release
		err error
	}
	done := make(chan result, 1)
	go func() {
		rel, err := RunVote(ctx, s, lis)
		done <- result{rel, err}
	}()
	select {
	case r := <-done:
		mu.Lock()
		after := time.Since(last)
		mu.Unlock()
		ccancel()
		wg.Wait()
		return r.rel, r.err, after
	case <-time.After(40 * time.Second):
		t.Fatal("RunVote had not returned after 40 s")
	}
	return nil, nil, 0
}

// H5: an idle TCP connection to the server does not hold RunVote past the
// protocol's end (before, gRPC's stop waited for its two-minute handshake
// timeout), nor past a cancellation.
func TestRunVoteIgnoresIdleConnection(t *testing.T) {
	rel, err, after := runToyVote(t, toyVote(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if after > 5*time.Second {
		t.Errorf("RunVote returned %v after the last round", after)
	}
	if rel.Model == nil || rel.Failed {
		t.Errorf("no model released")
	}
	_, err, after = runToyVote(t, toyVote(t), func(e federated.Event, cancel context.CancelFunc) {
		if e.Stage == "joined" {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || after > 5*time.Second {
		t.Errorf("cancelled: error %v, returned %v after the cancellation", err, after)
	}
}

// A run cancelled once the winner is announced has released the vote to
// the clients: RunVote returns a failed release (no model) whose ledger
// holds the vote at its survivors and the final training, with the error.
func TestRunVoteCancelledAfterTheVoteKeepsItsLedger(t *testing.T) {
	rel, err, _ := runToyVote(t, toyVote(t), func(e federated.Event, cancel context.CancelFunc) {
		if e.Stage == "winner" {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || rel == nil || !rel.Failed || rel.Model != nil {
		t.Fatalf("release %+v, error %v; want a failed release and the cancellation", rel, err)
	}
	if len(rel.Ledger.Entries) != 2 || !strings.Contains(rel.Ledger.Entries[0].Label, "2 of 2") {
		t.Fatalf("ledger %+v", rel.Ledger)
	}
	rep, ok := rel.Report.(*VoteFailedReport)
	if !ok || rep.Survivors != 2 || rep.Epsilon == nil || *rep.Epsilon > 20*(1+1e-6) || len(rep.Ledger.Entries) != 2 {
		t.Fatalf("failed report %+v", rel.Report)
	}
	if rep.Error != "the vote was interrupted after votes were summed" {
		t.Errorf("released error %q: want the fixed sentence, not the error's text", rep.Error)
	}
}
