package tuning

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// testOptions declares one option of each type an option may have.
type testOptions struct {
	N     int           `option:"n" default:"3" help:"an int"`
	X     float64       `option:"x" default:"0.25" help:"a float"`
	B     bool          `option:"b" default:"true" help:"a bool"`
	S     string        `option:"s" help:"a file" curator:"s.csv"`
	D     time.Duration `option:"d" default:"90s" help:"a duration"`
	Other int           // not an option
}

// An options struct's tags are its options: names, typed defaults, help
// and curator file, in field order; the defaults fill DefaultOptions.
func TestOptionsOf(t *testing.T) {
	want := []Option{{"n", 3, "an int", ""}, {"x", 0.25, "a float", ""}, {"b", true, "a bool", ""}, {"s", "", "a file", "s.csv"}, {"d", 90 * time.Second, "a duration", ""}}
	got := OptionsOf(&testOptions{N: 7})
	if len(got) != len(want) {
		t.Fatalf("%d options, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("option %d: %#v, want %#v", i, got[i], want[i])
		}
	}
	if d := DefaultOptions[testOptions](); d != (testOptions{N: 3, X: 0.25, B: true, D: 90 * time.Second}) {
		t.Errorf("defaults %+v", d)
	}
}

// Values round-trip through the struct; a missing name takes its
// default; an unknown name or a value of the wrong type is refused,
// wrapping ErrInvalid and naming the option, and left at its default.
func TestDecodeOptions(t *testing.T) {
	o := testOptions{N: 1, X: 2, S: "f", D: time.Minute}
	if got, err := DecodeOptions[testOptions]("test", OptionValues(o)); err != nil || got != o {
		t.Errorf("round trip %+v, %v; want %+v", got, err, o)
	}
	got, err := DecodeOptions[testOptions]("test", Values{"n": 5})
	if err != nil || got != (testOptions{N: 5, X: 0.25, B: true, D: 90 * time.Second}) {
		t.Errorf("n = 5: %+v, %v", got, err)
	}
	for name, v := range map[string]Values{
		`"nn"`:     {"nn": 5, "x": 1.0},
		"option n": {"n": 5.0},
		"option d": {"d": 5},
		`"Other"`:  {"Other": 1},
		"option b": {"b": "yes"},
	} {
		got, err := DecodeOptions[testOptions]("test", v)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), name) {
			t.Errorf("%v: %v", v, err)
		}
		if got.N != 3 && got.N != 5 {
			t.Errorf("%v: n = %d", v, got.N)
		}
	}
}

// A Go caller's misspelt option reaches no tuner: each built-in tuner's
// Check refuses a name it does not declare, naming it (the default among
// the candidates, which one tuner needs first).
func TestTunersRefuseUnknownOptions(t *testing.T) {
	for _, tu := range Tuners() {
		err := tu.Check(Spec{Options: Values{"clinets": 5}, Default: &Candidate{}})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"clinets"`) {
			t.Errorf("%s: %v", tu.Name(), err)
		}
	}
}
