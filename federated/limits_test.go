package federated

import (
	"context"
	"errors"
	"testing"

	"github.com/dptune/dptune/data"
	pb "github.com/dptune/dptune/federated/votepb"
	"github.com/dptune/dptune/privacy/accounting"
)

// hostileJob is an active server's job that passes Job.Check: a vote noise
// of 1.5e-9 votes (the scale 2^30 keeps each share's σ at ½) and a
// non-private final training.
func hostileJob(t *testing.T) Job {
	j := toyJob(t, 10, 0)
	j.Mechanism.Scale = 1 << 30
	j.Mechanism.NoiseStddev = 0.5 * 3.1623 / (1 << 30)
	j.Final.Mode = FinalNonPrivate
	if err := j.Check(); err != nil {
		t.Fatalf("the hostile job should pass Job.Check: %v", err)
	}
	return j
}

func TestLimitsRefuseHostileJob(t *testing.T) {
	j := hostileJob(t)
	for _, l := range []Limits{
		{MaxEpsilon: DefaultMaxEpsilon, MaxDelta: DefaultMaxDelta},                        // non-private final training
		{MaxEpsilon: DefaultMaxEpsilon, MaxDelta: DefaultMaxDelta, AllowNonPrivate: true}, // the vote's ε is ≈ 5e17
	} {
		if err := l.Check(j); !errors.Is(err, ErrRefused) {
			t.Errorf("limits %+v: %v, want a refusal", l, err)
		}
	}
}

// The client's own c: a job assuming fewer colluders (hence a lower
// threshold, which the split-U3 attack needs) is refused.
func TestLimitsRefuseFewerColluders(t *testing.T) {
	j := toyJob(t, 6, 0) // c = 0, t = 4
	l := Limits{MaxEpsilon: 1e9, MaxDelta: DefaultMaxDelta, Colluding: 1}
	if err := l.Check(j); !errors.Is(err, ErrRefused) {
		t.Errorf("c = 0 against the client's 1: %v, want a refusal", err)
	}
	// A job that names c = 1 but keeps c = 0's threshold fails Job.Check
	// already; one with both right passes.
	j.Colluding, j.Mechanism.Colluding, j.Threshold = 1, 1, Threshold(6, 1)
	if err := j.Check(); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(j); err != nil {
		t.Errorf("c = 1, t = %d: %v", j.Threshold, err)
	}
}

// The limit is the RDP ε of the vote at its fewest survivors composed with
// the final training: a limit just above it accepts the job, just below it
// refuses it.
func TestLimitsAtTheJobsEpsilon(t *testing.T) {
	j := toyJob(t, 4, 0.25)
	ev, err := j.TrainingEvent()
	if err != nil {
		t.Fatal(err)
	}
	g, err := accounting.RDP{}.Epsilon(accounting.Composed{Events: []accounting.Event{j.Mechanism.Event(3), ev}}, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Limits{MaxEpsilon: g.Epsilon * 1.001, MaxDelta: 1e-6}).Check(j); err != nil {
		t.Errorf("ε = %g against a limit of %g: %v", g.Epsilon, g.Epsilon*1.001, err)
	}
	if err := (Limits{MaxEpsilon: g.Epsilon * 0.999, MaxDelta: 1e-6}).Check(j); !errors.Is(err, ErrRefused) {
		t.Errorf("ε = %g against a limit of %g: %v, want a refusal", g.Epsilon, g.Epsilon*0.999, err)
	}
}

// A client with limits leaves a hostile server's session before it loads
// its data or sends round 0's keys.
func TestClientRefusesHostileJob(t *testing.T) {
	j := hostileJob(t)
	srv, err := NewServer(j)
	if err != nil {
		t.Fatal(err)
	}
	dial := serveInMemory(t, srv)
	loaded := false
	c := &Client{Load: func(Job) (*data.Dataset, error) { loaded = true; return toyData(800), nil }, Part: 1, Parts: 10,
		Limits: &Limits{MaxEpsilon: DefaultMaxEpsilon, MaxDelta: DefaultMaxDelta, AllowNonPrivate: true}}
	_, err = c.Run(context.Background(), pb.NewVoteClient(dial()))
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("Run: %v, want a refusal", err)
	}
	if loaded {
		t.Error("the client loaded its data")
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if _, ok := srv.sums[0]; ok {
		t.Error("the server received the client's keys")
	}
}
