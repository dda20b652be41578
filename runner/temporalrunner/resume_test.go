package temporalrunner

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"go.temporal.io/sdk/converter"
)

// failingKey is a server whose key queries fail while fail is set: the
// workflow starts, Open does not complete.
type failingKey struct {
	*server
	fail bool
}

func (s *failingKey) QueryWorkflow(ctx context.Context, id, run, query string, args ...any) (converter.EncodedValue, error) {
	if s.fail {
		return nil, errors.New("query timed out")
	}
	return s.server.QueryWorkflow(ctx, id, run, query, args...)
}

// A first Open that started the workflow but failed before it completed
// (its key query failed) leaves nothing run and nothing reserved: the rerun
// takes that workflow's key, its own, but is not a resume — so it never
// takes over a budget reservation as its own. An Open that completed and
// was interrupted is a resume.
func TestOpenFailedIsNotResumed(t *testing.T) {
	ctx := context.Background()
	c := testCodec(t, 9)
	var s [32]byte
	o := OpenOptions{WorkflowID: "W", TaskQueue: "q", Codec: c, Settings: s, Record: filepath.Join(t.TempDir(), "open.json")}
	srv := &failingKey{server: newServer(c), fail: true}
	if _, err := Open(ctx, srv, o); err == nil {
		t.Fatal("Open succeeded with a failing key query")
	}
	if len(srv.runs) != 1 {
		t.Fatalf("%d workflows started, want 1", len(srv.runs))
	}
	srv.fail = false
	r, err := Open(ctx, srv, o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Resumed() {
		t.Error("a rerun after an Open that never completed is marked resumed")
	}
	again, err := Open(ctx, srv, o)
	if err != nil || !again.Resumed() || again.Key() != r.Key() {
		t.Errorf("a rerun after a completed Open: %v (resumed %v, same key %v)", err, again != nil && again.Resumed(), again != nil && again.Key() == r.Key())
	}
}
