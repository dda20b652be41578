package temporalrunner

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/dptune/dptune/runner"
)

// jobServer plays a Temporal server and its workers for Runner.Run: the
// submitted jobs run through the activity (Jobs.Job) and their results
// come back through the sealing converter, bound to workflow W and run R,
// as over the wire. A hostile server rewrites the results before it
// answers (move).
type jobServer struct {
	client.Client
	t       *testing.T
	dc      sealedConverter
	results []Result
	move    func([]Result)
	// record keeps the first answer, which every later query then gets
	// (a replayed answer).
	record bool
	replay *commonpb.Payloads
	limit  int // > 0: the most results one answer holds
}

func (s *jobServer) SignalWorkflow(ctx context.Context, id, run, name string, arg any) error {
	p, err := s.dc.WithContext(ctx).ToPayloads(arg)
	if err != nil {
		return err
	}
	var ts []runner.Task
	if err := s.dc.WithContext(WithExecution(ctx, id, run)).FromPayloads(p, &ts); err != nil || name != signalSubmit {
		return fmt.Errorf("signal %s: %v", name, err)
	}
	var suite testsuite.WorkflowTestSuite
	for _, t := range ts {
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(Tasks{}.Task)
		v, err := env.ExecuteActivity(Tasks{}.Task, t)
		if err != nil {
			return err
		}
		var out []byte
		if err := v.Get(&out); err != nil {
			return err
		}
		s.results = append(s.results, Result{ID: t.ID, Output: out})
	}
	if s.move != nil {
		s.move(s.results)
	}
	return nil
}

func (s *jobServer) QueryWorkflow(ctx context.Context, id, run, query string, args ...any) (converter.EncodedValue, error) {
	if query != queryResults || len(args) != 1 {
		return nil, errors.New("no such query")
	}
	dc := s.dc.WithContext(WithExecution(ctx, id, run))
	var from int
	if err := dc.FromPayload(args[0].(converter.RawValue).Payload(), &from); err != nil {
		return nil, err
	}
	if s.replay != nil {
		return answer{s.dc.WithContext(context.Background()), s.replay}, nil
	}
	rs := s.results[min(from, len(s.results)):]
	if s.limit > 0 {
		rs = rs[:min(s.limit, len(rs))]
	}
	p, err := dc.ToPayloads(resultsAnswer{From: from, Results: rs})
	if s.record {
		s.replay = p
	}
	if err != nil {
		return nil, err
	}
	return answer{s.dc.WithContext(context.Background()), p}, nil
}

// An output bound to one job never passes as another's: Run refuses a
// result that the server moved from one job to another of the same
// workflow and run (all sealed alike, so the seal alone cannot tell), and
// done never sees it. The doubling tuner's attack — every part slot of a
// candidate filled with part 0's output — and a swap of two random-stop
// runs are both refused; an honest server's outputs pass.
func TestRunRefusesMovedOutputs(t *testing.T) {
	c := testCodec(t, 5)
	tasks := []runner.Task{task("part 0", "test.square", 2), task("part 1", "test.square", 3), task("part 2", "test.square", 4)}
	want := []string{"4", "9", "16"}
	for _, tc := range []struct {
		name string
		move func([]Result)
	}{
		{"honest", nil},
		{"part 0 everywhere", func(rs []Result) {
			for i := range rs {
				rs[i].Output = rs[0].Output
			}
		}},
		{"swap", func(rs []Result) { rs[1].Output, rs[2].Output = rs[2].Output, rs[1].Output }},
	} {
		srv := &jobServer{t: t, dc: NewDataConverter(c).(sealedConverter), move: tc.move}
		r := &Runner{c: srv, id: "W", run: "R", codec: c, Poll: time.Millisecond, fetched: map[string]Result{}}
		seen := 0
		err := r.Run(context.Background(), tasks, func(i int, out []byte) error {
			if string(out) != want[i] {
				t.Errorf("%s: job %s got output %s, want %s", tc.name, tasks[i].ID, out, want[i])
			}
			seen++
			return nil
		})
		switch {
		case tc.move == nil && (err != nil || seen != len(tasks)):
			t.Errorf("honest server: %v, %d of %d outputs", err, seen, len(tasks))
		case tc.move != nil && !errors.Is(err, ErrUnsealed):
			t.Errorf("%s: Run returned %v, want a refused output", tc.name, err)
		}
	}
}

// openOutput opens an output only as the job it was bound to: not under
// another ID, nor under the same ID with another kind or input.
func TestOpenOutputBindsJob(t *testing.T) {
	a := task("run 1 #x", "test.square", 3)
	b, err := bindOutput(a, []byte("9"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := openOutput(a, b); err != nil || string(out) != "9" {
		t.Fatalf("its own job: %q, %v", out, err)
	}
	for _, other := range []runner.Task{task("run 2 #x", "test.square", 3), task("run 1 #x", "test.square", 4),
		task("run 1 #x", "test.flaky", 3)} {
		if out, err := openOutput(other, b); !errors.Is(err, ErrUnsealed) {
			t.Errorf("job %s %s %s opened another job's output: %q, %v", other.ID, other.Kind, other.Input, out, err)
		}
	}
	if _, err := openOutput(a, []byte("9")); !errors.Is(err, ErrUnsealed) {
		t.Errorf("an unbound output opened: %v", err)
	}
}

// An earlier results answer replayed for a later query is refused: it
// names the position it answers, so the curator never moves past results
// it has not seen (and then waits for ever).
func TestRunRefusesReplayedResults(t *testing.T) {
	c := testCodec(t, 6)
	tasks := []runner.Task{task("run 1", "test.square", 2), task("run 2", "test.square", 3)}
	srv := &jobServer{t: t, dc: NewDataConverter(c).(sealedConverter), record: true, limit: 1}
	r := &Runner{c: srv, id: "W", run: "R", codec: c, Poll: time.Millisecond, fetched: map[string]Result{}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := r.Run(ctx, tasks, func(int, []byte) error { return nil })
	if !errors.Is(err, ErrUnsealed) {
		t.Errorf("Run with a replayed results answer returned %v, want a refused answer", err)
	}
}
