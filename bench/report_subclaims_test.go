package bench

import (
	"strings"
	"testing"
)

// Figure 6 is reproduced only when all three sub-claims hold: an audit far
// below ε_U-O at the smaller τ makes it partly reproduced, and a broken
// order fails the first sub-claim as well.
func TestXiangFigure6Subclaims(t *testing.T) {
	panel := func(tau, lowerShare float64) AuditPanel {
		return AuditPanel{Tau: tau, Points: []AuditPoint{
			{BaseEpsilon: 1, UpperP: 2, UpperG: 1.2, UpperO: 1.1, Lower: 1.1 * lowerShare},
			{BaseEpsilon: 2, UpperP: 4, UpperG: 2.3, UpperO: 2.2, Lower: 2.2 * lowerShare},
		}}
	}
	for _, c := range []struct {
		name   string
		panels []AuditPanel
		want   string
	}{
		{"tight at small τ", []AuditPanel{panel(1, 0.6), panel(0.1, 0.95)}, "reproduced"},
		{"gap stays", []AuditPanel{panel(1, 0.6), panel(0.1, 0.65)}, "partly reproduced"},
		{"order broken and loose", []AuditPanel{{Tau: 0.1, Points: []AuditPoint{{BaseEpsilon: 1, UpperP: 1, UpperG: 1.2, UpperO: 0.9, Lower: 0.1}}}}, "not reproduced"},
	} {
		v, ok := xiangFigure6Verdict(c.panels)
		if !ok || v.Outcome != c.want {
			t.Errorf("%s: outcome %q (%v), want %q: %s", c.name, v.Outcome, ok, c.want, v.Why)
		}
	}
	if _, ok := xiangFigure6Verdict(nil); ok {
		t.Error("no points judged")
	}
}

// Figure 2a's third sub-claim fails when any simulated loss deviation
// keeps P(good) below 0.9 at ε ≥ 1, and the Why says at which deviation.
func TestDPHypeFigure2aSubclaims(t *testing.T) {
	pt := func(s float64, l int, e, p float64) VoteSimPoint {
		return VoteSimPoint{Figure: "2a", LossStddev: s, Good: 5, VotesPerClient: l, Epsilon: e, Success: p, CI95: 0.02}
	}
	sim := []VoteSimPoint{
		pt(0.5, 1, 1, 0.99), pt(0.5, 5, 1, 1), pt(0.5, 20, 1, 0.95), pt(0.5, 1, 0.1, 0.2), pt(0.5, 5, 0.1, 0.3), pt(0.5, 20, 0.1, 0.15),
		pt(2, 1, 1, 0.9), pt(2, 5, 1, 0.99), pt(2, 20, 1, 0.9),
	}
	v, ok := dpHypeFigure2aVerdict(sim)
	if !ok || v.Outcome != "reproduced" {
		t.Fatalf("every sub-claim holds: %q: %s", v.Outcome, v.Why)
	}
	sim[6], sim[7] = pt(2, 1, 1, 0.3), pt(2, 5, 1, 0.4)
	v, _ = dpHypeFigure2aVerdict(sim)
	if v.Outcome != "partly reproduced" || !strings.Contains(v.Ours, "s = 2: 0 of 2 (lowest 0.30)") {
		t.Errorf("overlapping losses at ε = 1: %q: %s / %s", v.Outcome, v.Why, v.Ours)
	}
}
