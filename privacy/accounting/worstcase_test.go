package accounting

import (
	"math"
	"testing"
)

// TestWorstCaseIsThePointwiseMaximum checks WorstCase against the RDP of
// each member computed alone: two DP-SGD runs whose curves cross (a long run
// at a small sampling rate against a short one at a large rate), so the
// maximum takes each member at some orders.
func TestWorstCaseIsThePointwiseMaximum(t *testing.T) {
	a := DPSGD(1.1, 0.01, 3000)
	b := DPSGD(1.1, 0.2, 40)
	ra, err := RDP{}.RDP(a)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := RDP{}.RDP(b)
	if err != nil {
		t.Fatal(err)
	}
	w, err := RDP{}.RDP(WorstCase{Events: []Event{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	fromA, fromB := 0, 0
	for i := range w {
		want := math.Max(ra[i], rb[i])
		if w[i] != want {
			t.Fatalf("order %v: worst case %v, want max(%v, %v)", DefaultOrders[i], w[i], ra[i], rb[i])
		}
		if ra[i] > rb[i] {
			fromA++
		} else if rb[i] > ra[i] {
			fromB++
		}
	}
	if fromA == 0 || fromB == 0 {
		t.Fatalf("the two curves do not cross (%d orders from a, %d from b): the test does not test the maximum", fromA, fromB)
	}
	// Inside a composition, twice the worst case is twice the maximum.
	twice, err := RDP{}.RDP(SelfComposed{Event: WorstCase{Events: []Event{b, a}}, Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	for i := range w {
		if math.Abs(twice[i]-2*w[i]) > 1e-12*w[i] {
			t.Fatalf("order %v: composed twice %v, want %v", DefaultOrders[i], twice[i], 2*w[i])
		}
	}
	// Basic and GDP take the larger member too.
	e, d, err := epsilonDelta(WorstCase{Events: []Event{EpsilonDelta{Epsilon: 1, Delta: 1e-6}, EpsilonDelta{Epsilon: 0.5, Delta: 1e-5}}})
	if err != nil || e != 1 || d != 1e-5 {
		t.Fatalf("basic worst case = (%v, %v, %v), want (1, 1e-5)", e, d, err)
	}
	m, _, err := gdpMu2(WorstCase{Events: []Event{Gaussian{NoiseMultiplier: 2, Sensitivity: 1}, Gaussian{NoiseMultiplier: 1, Sensitivity: 1}}})
	if err != nil || m != 1 {
		t.Fatalf("gdp worst case μ² = %v (%v), want 1", m, err)
	}
}

func TestWorstCaseJSONAndRefusals(t *testing.T) {
	w := WorstCase{Events: []Event{DPSGD(1, 0.1, 10), Laplace{Scale: 2, Sensitivity: 1}}}
	b, err := MarshalEvent(w)
	if err != nil {
		t.Fatal(err)
	}
	back, err := UnmarshalEvent(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := MarshalEvent(back)
	if err != nil || string(b2) != string(b) {
		t.Fatalf("round trip: %s, want %s (%v)", b2, b, err)
	}
	if _, err := UnmarshalEvent([]byte(`{"type":"worst_case","events":[]}`)); err == nil {
		t.Fatal("a worst case of no events decoded")
	}
	if _, err := (RDP{}).RDP(WorstCase{}); err == nil {
		t.Fatal("the rdp accountant counted a worst case of no events")
	}
	if _, err := (PLD{}).Epsilon(w, 1e-5); err == nil {
		t.Fatal("the pld accountant counted a worst case")
	}
}
