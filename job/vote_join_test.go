package job

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/dptune/dptune/federated"
)

// A client that never joins does not stall RunVote: admissions close at
// the training rounds' deadline and the vote goes on with the two clients
// that joined (⌈(1−f)n⌉ = 2 of 3).
func TestRunVoteWithoutAClientThatNeverJoins(t *testing.T) {
	s := toyVote(t)
	s.Clients, s.Dropout = 3, 1.0/3
	s.TrainingTimeout = 3 * time.Second
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lim := federated.Limits{MaxEpsilon: s.Epsilon, MaxDelta: s.Delta}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			VoteClient(ctx, lis.Addr().String(), s.Transport, s.Data, i+1, 3, lim, nil)
		}()
	}
	rel, err := RunVote(ctx, s, lis)
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if rep, ok := rel.Report.(*VoteReport); !ok || rep.Survivors != 2 || rel.Model == nil {
		t.Fatalf("release %+v, want a model from the two clients that joined", rel.Report)
	}
}

// A client whose limits the server's job misses (ε = 20 against the
// client's 10) leaves with an error that is both ErrInvalid (exit status
// 2) and federated.ErrRefused, and the server, left without enough clients at
// the close of admissions, aborts.
func TestVoteClientRefusesAJobAboveItsEpsilon(t *testing.T) {
	s := toyVote(t)
	s.TrainingTimeout = time.Second
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cerr := make(chan error, 1)
	go func() {
		_, err := VoteClient(ctx, lis.Addr().String(), s.Transport, s.Data, 1, 2, federated.Limits{MaxEpsilon: federated.DefaultMaxEpsilon, MaxDelta: s.Delta}, nil)
		cerr <- err
	}()
	if _, err := RunVote(ctx, s, lis); !errors.Is(err, federated.ErrAborted) {
		t.Errorf("server: %v, want an abort", err)
	}
	if err := <-cerr; !errors.Is(err, ErrInvalid) || !errors.Is(err, federated.ErrRefused) {
		t.Errorf("client: %v, want a refusal", err)
	}
}

// Every honest plan meets the limits of a client that demands the
// curator's own ε, δ and c: the client's recomputation agrees with the
// curator's calibration, for each private final training.
func TestPlannedVoteMeetsTheCuratorsLimits(t *testing.T) {
	for _, final := range []string{federated.FinalDPSGD, federated.FinalDPFedAvg} {
		s := toyVote(t)
		s.FinalTraining, s.Clients, s.Colluding, s.Dropout = final, 5, 1, 0.2
		j, err := PlanVote(context.Background(), s)
		if err != nil {
			t.Fatalf("%s: %v", final, err)
		}
		if err := (federated.Limits{MaxEpsilon: s.Epsilon, MaxDelta: s.Delta, Colluding: s.Colluding}).Check(j); err != nil {
			t.Errorf("%s: %v", final, err)
		}
		if err := (federated.Limits{MaxEpsilon: s.Epsilon * 0.9, MaxDelta: s.Delta, Colluding: s.Colluding}).Check(j); !errors.Is(err, federated.ErrRefused) {
			t.Errorf("%s with 0.9 ε: %v, want a refusal", final, err)
		}
	}
}
