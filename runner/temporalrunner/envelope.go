package temporalrunner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/dptune/dptune/runner"
)

// taskOutput is what a job's activity returns: its output bound to the job
// it computed — the job's ID in the workflow and SHA-256 of its kind and
// input. It travels sealed (role "job output" in the activity's result,
// then inside the sealed "results answer"), so the server cannot forge
// one; but every output of a run is sealed to the same workflow, run and
// role, so the server could still move one job's sealed output into
// another job's result. Runner.Run therefore opens each output against the
// job it scheduled (openOutput) and refuses one computed for another job.
type taskOutput struct {
	ID     string `json:"id"`
	Input  string `json:"input"`
	Output []byte `json:"output"`
}

// inputDigest is hex SHA-256 of t's kind, a zero byte and its input.
func inputDigest(t runner.Task) string {
	h := sha256.New()
	h.Write([]byte(t.Kind))
	h.Write([]byte{0})
	h.Write(t.Input)
	return hex.EncodeToString(h.Sum(nil))
}

// bindOutput returns out bound to the job t that computed it.
func bindOutput(t runner.Task, out []byte) ([]byte, error) {
	return json.Marshal(taskOutput{ID: t.ID, Input: inputDigest(t), Output: out})
}

// openOutput returns the output that b binds to t, or an error when b was
// computed for another job (another ID, or the same ID with another kind
// or input) or is not a bound output.
func openOutput(t runner.Task, b []byte) ([]byte, error) {
	var o taskOutput
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, fmt.Errorf("temporalrunner: the output returned for job %s is not a bound job output: %w", t.ID, ErrUnsealed)
	}
	if o.ID != t.ID || o.Input != inputDigest(t) {
		return nil, fmt.Errorf("temporalrunner: the output returned for job %s was computed for another job (%q; moved by the server?): %w", t.ID, o.ID, ErrUnsealed)
	}
	return o.Output, nil
}

// resultsAnswer is the answer to the results query: the results from
// position From in the order they finished. Sealed whole, it names the
// position it answers, so an earlier answer replayed for a later query is
// refused instead of moving the curator past results it never saw.
type resultsAnswer struct {
	From    int
	Results []Result
}
