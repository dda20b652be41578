package job_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// failingRunner runs tasks in this process, but the task whose ID is fail
// fails with err(its ID) (as a runner reports a task's failure).
type failingRunner struct {
	fail string
	err  func(id string) error
}

func (r failingRunner) Run(ctx context.Context, tasks []runner.Task, done func(int, []byte) error) error {
	for _, t := range tasks {
		if t.ID == r.fail {
			return r.err(t.ID)
		}
	}
	return runner.Local{}.Run(ctx, tasks, done)
}

// A tuning whose runner fails one task releases (its report's Failed) a
// fixed string for the failure's class: never the task's ID (a run index
// of random-stop is a lower bound on the hidden K) nor a worker's error
// text; the returned error, the curator's own, keeps both.
func TestFailedReleaseHidesTheTask(t *testing.T) {
	detail := "open /srv/private/mnist: 517 images"
	classes := map[string]struct {
		err  func(id string) error
		want string
	}{
		"worker": {func(id string) error {
			return &runner.TaskError{ID: id + " #0a1b2c", Remote: true, Prefix: "temporalrunner", Err: errors.New(detail)}
		}, "a training job failed on a worker"},
		"refused": {func(id string) error {
			return &runner.TaskError{ID: id + " #0a1b2c", Remote: true, Prefix: "temporalrunner", Err: fmt.Errorf("%s: %w", detail, runner.ErrDataDiffers)}
		}, "a task was refused: a worker's copy of dataset "},
		"local": {func(id string) error {
			return &runner.TaskError{ID: id, Prefix: "runner", Err: errors.New(detail)}
		}, "a training job failed"},
	}
	tuners := map[string]struct {
		fail string
		set  func(*job.TuneSpec)
	}{
		"random-stop": {"run 3", func(s *job.TuneSpec) {
			s.Tuner, s.Repetitions, s.SelectionShare = tuning.RandomStopName, accounting.PoissonRepetitions(12), 0
		}},
		"doubling": {"candidate 1 part 0", func(s *job.TuneSpec) {
			s.Tuner, s.SelectionShare, s.ScoreNoise, s.Validation = tuning.DoublingName, 0, 0, ""
		}},
	}
	for tn, tu := range tuners {
		for cn, c := range classes {
			t.Run(tn+"/"+cn, func(t *testing.T) {
				spec := splitSpec()
				tu.set(&spec)
				spec.Runner = failingRunner{fail: tu.fail, err: c.err}
				rel, _, err := job.Tune(context.Background(), spec)
				if err == nil || rel == nil || !rel.Failed {
					t.Fatalf("a failed task: err %v, release %+v", err, rel)
				}
				if !strings.Contains(err.Error(), tu.fail) || !strings.Contains(err.Error(), detail) {
					t.Errorf("the returned error lost the task or its detail: %v", err)
				}
				var rep struct {
					Failed string `json:"failed"`
				}
				if b, err := json.Marshal(rel.Report); err != nil || json.Unmarshal(b, &rep) != nil {
					t.Fatalf("report %T: %v", rel.Report, err)
				}
				failed := rep.Failed
				if !strings.HasPrefix(failed, c.want) {
					t.Errorf("released failure %q, want %q", failed, c.want)
				}
				if c.want == "a training job failed" && failed != c.want {
					t.Errorf("released failure %q, want %q", failed, c.want)
				}
				for _, leak := range []string{tu.fail, "3", "1", "run", "#", "0a1b2c", "/srv", "517", "part", "candidate", "runner"} {
					if strings.Contains(failed, leak) {
						t.Errorf("released failure %q holds %q", failed, leak)
					}
				}
			})
		}
	}
}
