package accounting

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

var accountants = []Accountant{RDP{}, PLD{}, GDP{}, Basic{}}

// Every accountant names the event it cannot count, and never skips one.
func TestAccountantsRejectWhatTheyCannotCount(t *testing.T) {
	for _, acc := range accountants {
		_, err := acc.Epsilon(Composed{Events: []Event{NonPrivate{}, fakeEvent{}}}, 1e-5)
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"fake"`) || !strings.Contains(err.Error(), acc.Name()) {
			t.Errorf("%s: %v", acc.Name(), err)
		}
	}
	sel := RepeatAndSelect{Event: DPSGD(1, 0.01, 10), Repetitions: TNBRepetitions(1, 0.1)}
	for _, acc := range []Accountant{PLD{}, GDP{}, Basic{}} {
		// Basic names the base's Gaussian, the others repeat-and-select.
		if _, err := acc.Epsilon(sel, 1e-5); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), map[string]string{"basic": "gaussian", "pld": "repeat", "gdp": "repeat"}[acc.Name()]) {
			t.Errorf("%s counted repeat-and-select of DP-SGD: %v", acc.Name(), err)
		}
	}
	for _, acc := range []Accountant{RDP{}, PLD{}} {
		if _, err := acc.Epsilon(EpsilonDelta{Epsilon: 1, Delta: 1e-6}, 1e-5); acc.Name() == "rdp" && !errors.Is(err, ErrUnsupported) {
			t.Errorf("rdp counted an (ε, δ > 0) event: %v", err)
		}
	}
	for _, acc := range accountants {
		for _, d := range []float64{0, 1, -1} {
			if _, err := acc.Epsilon(Laplace{Scale: 1, Sensitivity: 1}, d); err == nil {
				t.Errorf("%s accepted δ = %v", acc.Name(), d)
			}
		}
	}
}

// Every event survives the JSON round trip of the ledger.
func TestEventsJSONRoundTrip(t *testing.T) {
	rep := TNBRepetitions(0.5, 0.01)
	var l Ledger
	l.Add("tuning", RepeatAndSelect{Event: DPSGD(1.1, 0.004, 100), Repetitions: rep})
	l.Add("adaptive", AdaptiveRepeatAndSelect{Event: Laplace{Scale: 2, Sensitivity: 0.5}, Repetitions: rep, MaxRatio: 2, MinRatio: 0.75})
	l.Add("poisson", RepeatAndSelect{Event: EpsilonDelta{Epsilon: 1, Delta: 1e-9}, Repetitions: PoissonRepetitions(10)})
	l.Add("vote", Vote{NoiseStddev: 30, VotesPerClient: 3})
	l.Add("search", AboveThreshold{Epsilon: 0.1, MaxIterations: 40})
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	var back Ledger
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(l, back) {
		t.Fatalf("round trip changed the ledger:\n%+v\n%+v", l, back)
	}
	// Ledgers written before Gaussian had a sensitivity read it as 1.
	old, err := UnmarshalEvent([]byte(`{"type":"gaussian","noise_multiplier":2}`))
	if err != nil || old != (Gaussian{NoiseMultiplier: 2, Sensitivity: 1}) {
		t.Errorf("old Gaussian: %#v %v", old, err)
	}
	if _, err := UnmarshalEvent([]byte(`{"type":"self_composed","count":3}`)); err == nil {
		t.Error("self_composed without an inner event accepted")
	}
}
