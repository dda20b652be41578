package job

import (
	"slices"
	"testing"

	"github.com/dptune/dptune/audit"
	"github.com/dptune/dptune/tuning"
)

// The above-threshold audit's trial header names every field of the capped
// search (AboveThreshold.…), so that a resume with another setting of any
// of them is refused.
func TestAboveThresholdParamsNameEveryField(t *testing.T) {
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
	want := []string{"Protocol=above-threshold", "AboveThreshold.Epsilon0=1", "AboveThreshold.Granularity=0.05",
		"AboveThreshold.MaxIterations=8", "AboveThreshold.Partitions=10", "AboveThreshold.U0=0", "Confidence=0.95", "Delta=0.00001"}
	if !slices.Equal(keys, want) {
		t.Errorf("params %v\nwant %v", keys, want)
	}
}

// The protocol names job exports are exactly the registered ones
// (audit.Games), in their order.
func TestAuditNamesRegistered(t *testing.T) {
	var got []string
	for _, g := range audit.Games(nil) {
		got = append(got, g.Name)
	}
	want := []string{AuditReduced, AuditDPSGD, AuditTuner, AuditGP, AuditGrid, AuditNatural, AuditScore, AuditAboveThreshold}
	if !slices.Equal(got, want) {
		t.Errorf("registered %v, job names %v", got, want)
	}
	for _, name := range want {
		if g, ok := audit.Lookup(name); !ok || g.Name != name {
			t.Errorf("audit.Lookup(%q) = %v, %v", name, g.Name, ok)
		}
	}
}
