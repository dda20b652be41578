package temporalrunner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// server plays a Temporal server and its worker for Open and Close: the
// curator's payloads go through the sealing converter both ways, as they
// would over the wire. A hostile server replays: it keeps a closed
// workflow "running", or starts a new run with an old start payload.
type server struct {
	client.Client
	dc      sealedConverter
	runs    map[string]*wfRun // the running workflows, by ID
	starts  map[string]*commonpb.Payloads
	n       int
	hostile bool // closed workflows stay "running"
	// failSignal makes every signal fail, as a server that drops them.
	failSignal bool
	// replayStart, if set, is the start payload a new run gets instead of
	// the curator's.
	replayStart *commonpb.Payloads
}

type wfRun struct {
	run    string
	start  Start
	closed bool
}

type runHandle struct {
	client.WorkflowRun
	id, run string
}

func (h runHandle) GetID() string    { return h.id }
func (h runHandle) GetRunID() string { return h.run }

func newServer(c *Codec) *server {
	return &server{dc: NewDataConverter(c).(sealedConverter), runs: map[string]*wfRun{}, starts: map[string]*commonpb.Payloads{}}
}

func (s *server) ExecuteWorkflow(ctx context.Context, o client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	wire, err := s.dc.WithContext(ctx).ToPayloads(args...)
	if err != nil {
		return nil, err
	}
	if r := s.runs[o.ID]; r != nil && (!r.closed || s.hostile) {
		return runHandle{id: o.ID, run: r.run}, nil
	}
	if s.replayStart != nil {
		wire = s.replayStart
	}
	s.n++
	r := &wfRun{run: fmt.Sprintf("run-%d", s.n)}
	if err := s.dc.WithContext(WithExecution(ctx, o.ID, r.run)).FromPayloads(wire, &r.start); err != nil {
		return nil, err
	}
	s.runs[o.ID], s.starts[o.ID] = r, wire
	return runHandle{id: o.ID, run: r.run}, nil
}

type answer struct {
	dc converter.DataConverter
	p  *commonpb.Payloads
}

func (a answer) HasValue() bool    { return true }
func (a answer) Get(ptr any) error { return a.dc.FromPayloads(a.p, ptr) }

// QueryWorkflow converts as the SDK's client does: without a context.
func (s *server) QueryWorkflow(ctx context.Context, id, run, query string, args ...any) (converter.EncodedValue, error) {
	r := s.runs[id]
	if r == nil || query != queryKey || len(args) != 0 {
		return nil, errors.New("no such workflow or query")
	}
	p, err := s.dc.WithContext(WithExecution(ctx, id, r.run)).ToPayloads(r.start.Key)
	if err != nil {
		return nil, err
	}
	return answer{s.dc.WithContext(context.Background()), p}, nil
}

func (s *server) SignalWorkflow(ctx context.Context, id, run, name string, arg any) error {
	if s.failSignal {
		return errors.New("signal dropped")
	}
	r := s.runs[id]
	p, err := s.dc.WithContext(ctx).ToPayloads(arg)
	if err != nil {
		return err
	}
	var req closeRequest
	if err := s.dc.WithContext(WithExecution(ctx, id, r.run)).FromPayloads(p, &req); err != nil || name != signalClose {
		return fmt.Errorf("signal %s: %v", name, err)
	}
	r.closed = true
	return nil
}

// Open trusts the key a workflow answers only if this curator wrapped it
// for this workflow and settings and has not closed its invocation: a
// legitimately interrupted invocation resumes with its key; a closed
// invocation's key replayed (the same workflow kept "running", or its
// start payload replayed into a new run), another invocation's and
// another curator's are refused and never set Resumed.
func TestOpenRefusesReplayedKeys(t *testing.T) {
	ctx := context.Background()
	c := testCodec(t, 7)
	rec := filepath.Join(t.TempDir(), "open.json")
	var s1, s2 [32]byte
	s1[0], s2[0] = 1, 2
	opts := func(id string, s [32]byte) OpenOptions {
		return OpenOptions{WorkflowID: id, TaskQueue: "q", Codec: c, Settings: s, Record: rec}
	}
	srv := newServer(c)
	srv.hostile = true
	first, err := Open(ctx, srv, opts("W", s1))
	if err != nil || first.Resumed() {
		t.Fatalf("first open: %v, resumed %v", err, first != nil && first.Resumed())
	}
	// Interrupted (no Close): the next process resumes it, with its key.
	again, err := Open(ctx, srv, opts("W", s1))
	if err != nil || !again.Resumed() || again.Key() != first.Key() {
		t.Fatalf("resume: %v (resumed %v, same key %v)", err, again != nil && again.Resumed(), again != nil && again.Key() == first.Key())
	}
	if err := again.Close(ctx); err != nil {
		t.Fatal(err)
	}
	// Closed; the hostile server keeps it "running" and answers its key.
	if r, err := Open(ctx, srv, opts("W", s1)); !errors.Is(err, ErrForeignKey) {
		t.Errorf("a closed invocation's key was taken: %v (resumed %v)", err, r != nil && r.Resumed())
	}
	// The same settings under another workflow ID, or other settings under
	// this one: the blob is bound to both.
	srv2 := newServer(c)
	srv2.hostile = true
	w2, err := Open(ctx, srv2, opts("W2", s1))
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Open(ctx, srv2, opts("W2", s2)); !errors.Is(err, ErrForeignKey) {
		t.Errorf("a key wrapped for other settings was taken: %v (resumed %v)", err, r != nil && r.Resumed())
	}
	srv2.runs["W3"] = srv2.runs["W2"]
	if r, err := Open(ctx, srv2, opts("W3", s1)); !errors.Is(err, ErrForeignKey) {
		t.Errorf("another workflow's key was taken: %v (resumed %v)", err, r != nil && r.Resumed())
	}
	// A new run started with an old, closed invocation's start payload.
	if err := w2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	srv3 := newServer(c)
	srv3.replayStart = srv2.starts["W2"]
	if r, err := Open(ctx, srv3, opts("W2", s1)); !errors.Is(err, ErrForeignKey) {
		t.Errorf("a replayed start's key was taken: %v (resumed %v)", err, r != nil && r.Resumed())
	}
	// Another curator's key.
	other := newServer(testCodec(t, 8))
	if _, err := Open(ctx, other, OpenOptions{WorkflowID: "W4", TaskQueue: "q", Codec: testCodec(t, 8), Settings: s1, Record: rec}); err != nil {
		t.Fatal(err)
	}
	other.dc = srv.dc // the server now speaks to this curator with that blob
	if r, err := Open(ctx, other, opts("W4", s1)); err == nil || r != nil {
		t.Errorf("another curator's key was taken (resumed %v)", r != nil && r.Resumed())
	}
	// Close reports a failed close signal, and the invocation is recorded
	// closed all the same: its key never resumes another process.
	srv4 := newServer(c)
	srv4.hostile = true
	z, err := Open(ctx, srv4, opts("Z", s1))
	if err != nil {
		t.Fatal(err)
	}
	srv4.failSignal = true
	if err := z.Close(ctx); err == nil {
		t.Error("a failed close signal was not reported")
	}
	if r, err := Open(ctx, srv4, opts("Z", s1)); !errors.Is(err, ErrForeignKey) {
		t.Errorf("a closed invocation whose close signal failed resumed: %v (resumed %v)", err, r != nil && r.Resumed())
	}
	// Two fresh invocations never share a key.
	a, _ := Open(ctx, newServer(c), opts("X", s1))
	b, _ := Open(ctx, newServer(c), opts("Y", s1))
	if a == nil || b == nil || a.Key() == b.Key() || a.Key() == [32]byte{} {
		t.Error("two invocations share a key, or a key is zero")
	}
}
