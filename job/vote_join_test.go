package job

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/dptune/dptune/tuning/vote"
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
	lim := vote.Limits{MaxEpsilon: s.Epsilon, MaxDelta: s.Delta}
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
