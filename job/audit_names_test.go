package job

import (
	"slices"
	"testing"

	"github.com/dptune/dptune/tuning"
)

// The above-threshold audit's trial header keeps the keys earlier audits
// wrote ("Doubling.…"), so that their trial files resume.
func TestAboveThresholdParamsKeepTheirKeys(t *testing.T) {
	s := AuditSpec{Protocol: AuditAboveThreshold, Delta: 1e-5, Confidence: 0.95,
		AboveThreshold: tuning.CappedSearchConfig{Partitions: 10, Epsilon0: 1, Granularity: 0.05, MaxIterations: 8}}
	ps, err := s.Params()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, p := range ps {
		keys = append(keys, p.Key+"="+p.Value)
	}
	want := []string{"Protocol=above-threshold", "Confidence=0.95", "Delta=0.00001", "Doubling.Epsilon0=1", "Doubling.Granularity=0.05",
		"Doubling.MaxIterations=8", "Doubling.Partitions=10", "Doubling.U0=0"}
	if !slices.Equal(keys, want) {
		t.Errorf("params %v\nwant %v", keys, want)
	}
}
