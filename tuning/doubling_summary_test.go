package tuning

import (
	"bytes"
	"strings"
	"testing"
)

// An interrupted doubling run prints what it spent, not a final run that
// never ran.
func TestDoublingSummaryOfInterruptedRun(t *testing.T) {
	var b bytes.Buffer
	(&DoublingReport{Epsilon: 0.9, Delta: 1e-5, MaxIterations: 9, Epsilon0: 0.1, TuningOverhead: 0.9, Interrupted: true}).PrintSummary(&b)
	if s := b.String(); !strings.Contains(s, "no final run") || strings.Contains(s, "final run 0") || !strings.Contains(s, "released       nothing") {
		t.Errorf("summary:\n%s", s)
	}
}
