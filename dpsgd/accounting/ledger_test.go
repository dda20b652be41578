package accounting

import (
	"encoding/json"
	"reflect"
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
