package accounting

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestLedgerJSONRoundTrip(t *testing.T) {
	var l Ledger
	l.Add("training", DPSGD(1.1, 0.0042667, 2350))
	l.Add("baseline", Composed{Events: []Event{Gaussian{NoiseMultiplier: 3, Sensitivity: 1}, NonPrivate{Reason: "public score"}}})
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var back Ledger
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l, back) {
		t.Fatalf("round trip changed the ledger:\n%+v\n%+v\n%s", l, back, b)
	}
	if err := json.Unmarshal([]byte(`{"entries":[{"label":"x","event":{"type":"mystery"}}]}`), &back); err == nil {
		t.Fatal("unknown event type accepted")
	}
	g1, _ := l.Spent(RDP{}, 1e-5)
	if g1.Accountant != "rdp" {
		t.Fatal(g1)
	}
}

// A version-1 ledger stored a Gaussian's noise standard deviation in the
// query's units under "noise_multiplier" (here a private score: std 20/5000
// on an accuracy of sensitivity 1/5000) and a vote's standard deviation
// likewise. Read back, it is converted to the field's meaning (σ/Δ = 20);
// rewritten, it says so, and the old and the rewritten ledger give the same
// ε by every accountant that counts them.
func TestLedgerVersion1IsConverted(t *testing.T) {
	old := `{"entries":[
	  {"label":"training","event":{"type":"self_composed","count":2350,"event":{"type":"poisson_sampled","sampling_rate":0.0042667,"event":{"type":"gaussian","noise_multiplier":0.7422,"sensitivity":1}}}},
	  {"label":"score","event":{"type":"gaussian","noise_multiplier":0.004,"sensitivity":0.0002}},
	  {"label":"vote","event":{"type":"vote","noise_multiplier":30,"votes_per_client":3}}]}`
	var l Ledger
	if err := json.Unmarshal([]byte(old), &l); err != nil {
		t.Fatal(err)
	}
	score := l.Entries[1].Event.(Gaussian)
	near(t, "converted noise multiplier", score.NoiseMultiplier, 20, 1e-12)
	if v := l.Entries[2].Event.(Vote); v.NoiseStddev != 30 || v.VotesPerClient != 3 {
		t.Fatalf("vote %+v", v)
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"version":2`) || !strings.Contains(string(b), `"noise_multiplier":20`) {
		t.Fatalf("rewritten ledger %s", b)
	}
	var back Ledger
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	// The old mechanism, independently: RDP α·Δ²/(2σ²) with σ = 0.004 and
	// Δ = 0.0002, i.e. α/800, plus the training and the vote (α·ℓ/σ²).
	orders := []float64{2, 8, 32}
	want := make([]float64, len(orders))
	for i, a := range orders {
		want[i] = SubsampledGaussianRDP(0.0042667, 0.7422, a)*2350 + a*0.0002*0.0002/(2*0.004*0.004) + a*3/900
	}
	for _, led := range []Ledger{l, back} {
		got, err := RDP{Orders: orders}.RDP(led.Event())
		if err != nil {
			t.Fatal(err)
		}
		for i := range orders {
			near(t, "rdp", got[i], want[i], 1e-9)
		}
	}
	for _, acc := range []Accountant{RDP{}, PLD{}} {
		g1, err1 := l.Spent(acc, 1e-5)
		g2, err2 := back.Spent(acc, 1e-5)
		if err1 != nil || err2 != nil || g1.Epsilon != g2.Epsilon {
			t.Errorf("%s: old %v (%v), rewritten %v (%v)", acc.Name(), g1.Epsilon, err1, g2.Epsilon, err2)
		}
	}
	if err := json.Unmarshal([]byte(`{"version":3,"entries":[]}`), &back); err == nil {
		t.Error("a ledger from a future version accepted")
	}
}

// The discrete Gaussian is counted by RDP only: the others say so.
func TestDiscreteGaussianOnlyRDP(t *testing.T) {
	e := DiscreteGaussian{NoiseMultiplier: 20, Sensitivity: 1}
	if _, err := (RDP{}).Epsilon(e, 1e-5); err != nil {
		t.Fatal(err)
	}
	for _, acc := range []Accountant{PLD{}, GDP{}, Basic{}} {
		if _, err := acc.Epsilon(e, 1e-5); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: %v", acc.Name(), err)
		}
	}
}
