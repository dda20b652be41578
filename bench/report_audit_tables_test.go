package bench

import (
	"strings"
	"testing"
)

// The audit tables' verdicts follow from their numbers: the tight DP-SGD
// audit is reproduced when the GDP-fitted ε is within 10% of the exact one
// at every claim; Table 3 is not reproduced, with the reason, when a
// published ε_L is above the exact ε of the game.
func TestAuditTablesVerdicts(t *testing.T) {
	tables := &AuditTables{
		TightDPSGD: []TightDPSGDRow{{Epsilon: 2, EpsilonPLD: 1.84, Lower: 1.0, GDPEstimate: 1.83}, {Epsilon: 4, EpsilonPLD: 3.70, Lower: 2.1, GDPEstimate: 3.69}},
		Table3: []Table3Row{{BaseEpsilon: 1, Published: 1.17, Lower: 0.78, UpperO: 1.16}, {BaseEpsilon: 2, Published: 2.36, Lower: 1.71, UpperO: 2.31},
			{BaseEpsilon: 4, Published: 4.28, Lower: 3.38, UpperO: 4.55}},
		Tuners: []TunerAuditRow{{Tuner: "grid (4 candidates)", Setting: "ε_B = 1", Lower: 0.9, Upper: map[string]float64{"rdp": 2.14, "pld": 1.97}, Trials: 100000}},
	}
	var w strings.Builder
	v := auditTables(&w, 100000, 50, "2 CPUs", tables)
	if len(v) != 2 || v[0].Outcome != "reproduced" || v[1].Outcome != "not reproduced" || !strings.Contains(v[1].Why, "at 2 of 3 ε_B") {
		t.Errorf("verdicts %+v", v)
	}
	for _, want := range []string{"1.00 / 2.10", "1.17 / 2.36 / 4.28", "0.78 / 1.71 / 3.38", "pld 1.97, rdp 2.14"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("the section lacks %q:\n%s", want, w.String())
		}
	}
	tables.TightDPSGD[1].GDPEstimate = 3
	if v := auditTables(&strings.Builder{}, 100000, 50, "2 CPUs", tables); v[0].Outcome != "not reproduced" {
		t.Errorf("GDP estimate 3 against 3.70: %+v", v[0])
	}
}
