package tuning

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/privacy/accounting"
)

// The built-in tuners are registered once each, in builtin.go's order, and
// an unknown name is refused with the list.
func TestBuiltinTuners(t *testing.T) {
	want := []string{"randomstop", "gp", "doubling", "grid", "recommended", "vote"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		tu, err := Lookup(n)
		if err != nil || tu.Name() != n {
			t.Errorf("Lookup(%q) = %v, %v", n, tu, err)
		}
		_, runs := tu.(Runner)
		_, parts := tu.(Partitioned)
		_, fed := tu.(Federated)
		if kinds := btoi(runs) + btoi(parts) + btoi(fed); kinds != 1 {
			t.Errorf("%s: Runner %v, Partitioned %v, Federated %v: want exactly one", n, runs, parts, fed)
		}
	}
	_, err := Lookup("bayes")
	if !errors.Is(err, ErrInvalid) || err.Error() != `unknown tuner "bayes" (want randomstop, gp, doubling, grid, recommended or vote)` {
		t.Errorf("Lookup(bayes): %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second randomstop registered")
		}
	}()
	Register(randomStop{})
}

// Each tuner's Event is the event of its paper's theorem, built here from
// its parts.
func TestTunerEvents(t *testing.T) {
	base := accounting.DPSGD(1.1, 0.01, 300)
	rep, _ := accounting.TNBWithMean(1, 10)
	space := Space{Name: "s", Dims: []Dim{{Name: LearningRate, Values: []float64{0.1, 0.2, 0.4}}, {Name: ClipNorm, Values: []float64{1, 2}}}}
	dbl := DoublingOptions{Partitions: 4, Epsilon0: 0.1, Granularity: 0.25, MaxIterations: 7, PartEpochs: 1}
	private := dbl
	private.Private, private.PartitionNoise = true, 1.5
	search := CappedSearchConfig{Partitions: 4, Epsilon0: 0.1, Granularity: 0.25, MaxIterations: 7}
	cases := []struct {
		tuner string
		spec  Spec
		want  accounting.Event
	}{
		{"randomstop", Spec{Repetitions: rep}, accounting.RepeatAndSelect{Event: base, Repetitions: rep}},
		{"gp", Spec{Repetitions: rep, Options: GPOptions{MaxRatio: 3, MinRatio: 0.5, Tau: 0.1, Beta: 1}.Values()},
			accounting.AdaptiveRepeatAndSelect{Event: base, Repetitions: rep, MaxRatio: 3, MinRatio: 0.5}},
		{"gp", Spec{Repetitions: rep}, accounting.AdaptiveRepeatAndSelect{Event: base, Repetitions: rep, MaxRatio: 2, MinRatio: 0.75}},
		{"grid", Spec{Space: space}, accounting.SelfComposed{Event: base, Count: 6}},
		{"doubling", Spec{Space: space, TrainN: 1000, BatchSize: 50, Options: dbl.Values()},
			accounting.Composed{Events: []accounting.Event{
				accounting.Composed{Events: []accounting.Event{accounting.AboveThreshold{Epsilon: search.IterationEpsilon(), MaxIterations: 7}}},
				base}}},
		{"doubling", Spec{Space: space, TrainN: 1000, BatchSize: 50, Epochs: 1, Options: private.Values()},
			accounting.Composed{Events: []accounting.Event{
				accounting.Composed{Events: []accounting.Event{
					// 4 parts of 250 examples at batch size 50: q = 0.2, 5 steps an epoch.
					accounting.SelfComposed{Event: accounting.DPSGD(1.5, 0.2, 5), Count: 6},
					accounting.AboveThreshold{Epsilon: search.IterationEpsilon(), MaxIterations: 7}}},
				base}}},
	}
	for _, c := range cases {
		tu, err := Lookup(c.tuner)
		if err != nil {
			t.Fatal(err)
		}
		got := tu.Event(base, c.spec)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Event = %#v, want %#v", c.tuner, got, c.want)
		}
	}
}

// The xiang-o event's μ is τ√T/σ of the DP-SGD base run, and a base that is
// not a DP-SGD run alone gets no finite μ.
func TestXiangEvent(t *testing.T) {
	rep := accounting.PoissonRepetitions(5)
	e := XiangEvent(accounting.DPSGD(2, 0.01, 400), rep).(accounting.GaussianSelect)
	if want := 0.01 * math.Sqrt(400) / 2; math.Abs(e.Mu-want) > 1e-12 || e.Repetitions != rep || e.Reduction != XiangO {
		t.Errorf("XiangEvent = %+v, want μ = %v", e, want)
	}
	scored := accounting.Composed{Events: []accounting.Event{accounting.DPSGD(2, 0.01, 400), accounting.DiscreteGaussian{NoiseMultiplier: 20, Sensitivity: 1}}}
	if e := XiangEvent(scored, rep).(accounting.GaussianSelect); !math.IsInf(e.Mu, 1) {
		t.Errorf("a scored base gets μ = %v", e.Mu)
	}
}

// A spec without options takes every option's default; the options of one
// tuner round-trip through Values.
func TestOptionDefaults(t *testing.T) {
	if got := GPOptionsOf(Spec{}); got != DefaultGPOptions() {
		t.Errorf("GP defaults %+v", got)
	}
	want := DoublingOptions{Partitions: 10, Epsilon0: 0.1, Granularity: 0.01, PartitionNoise: 1, PartEpochs: 3}
	if got := DoublingOptionsOf(Spec{}); got != want {
		t.Errorf("doubling defaults %+v, want %+v", got, want)
	}
	o := DoublingOptions{Partitions: 3, Epsilon0: 0.2, Granularity: 0.1, U0: 0.1, MaxIterations: 5, PartEpochs: 2, Private: true, PartitionNoise: 2, Cache: "c"}
	if got := DoublingOptionsOf(Spec{Options: o.Values()}); got != o {
		t.Errorf("round trip %+v, want %+v", got, o)
	}
	for _, tu := range Tuners() {
		for _, opt := range tu.Options() {
			if opt.Name == "" || opt.Help == "" || strings.Contains(opt.Help, "\n") {
				t.Errorf("%s: option %+v", tu.Name(), opt)
			}
		}
	}
}

// An option of the wrong type is refused, not read as its default; so is
// a name the tuner does not declare, another tuner's included (a misspelt
// key is never silently ignored).
func TestCheckOptions(t *testing.T) {
	tu, _ := Lookup("doubling")
	if err := CheckOptions(tu, Spec{Options: Values{"partitions": 2.0}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a float partitions: %v", err)
	}
	if err := CheckOptions(tu, Spec{Options: Values{"partitions": 2, "part-epochs": 1}}); err != nil {
		t.Errorf("valid options: %v", err)
	}
	if err := CheckOptions(tu, Spec{Options: Values{"partitions": 2, "tau": 0.5}}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"tau"`) {
		t.Errorf("the GP tuner's option: %v", err)
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
