package tuning

import (
	"slices"
	"strings"
	"testing"
)

// The built-in spaces are listed in registration order, space.go's first and
// a tuner's own after them, and errors list exactly those.
func TestSpaceRegistry(t *testing.T) {
	want := []string{"mnist-dphypo", "cifar10-dphypo", "mnist-doubling"}
	if got := SpaceNames(); len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
		t.Fatalf("SpaceNames() = %v, want %v first", got, want)
	}
	// mnist-doubling: 6 learning rates × 4 clipping norms.
	s, ok := BuiltinSpace("mnist-doubling")
	if !ok || s.Name != "mnist-doubling" || s.Size() != 24 {
		t.Fatalf("mnist-doubling: %v %v, size %d", ok, s.Name, s.Size())
	}
	_, err := LoadSpace("nope")
	if err == nil || !strings.Contains(err.Error(), "(want "+strings.Join(SpaceNames(), ", ")+" or a .json file)") ||
		!strings.Contains(err.Error(), "(want mnist-dphypo, cifar10-dphypo, mnist-doubling") {
		t.Errorf("LoadSpace(nope) = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a space registered twice did not panic")
		}
	}()
	RegisterSpace("mnist-dphypo", func() Space { return Space{} })
}

// Every tuner of the default line-up is registered, and only a tuner whose
// number of runs is drawn names a distribution.
func TestLineup(t *testing.T) {
	for _, e := range Lineup {
		tu, err := Lookup(e.Tuner)
		if err != nil {
			t.Fatal(err)
		}
		if e.Runs != "" && !tu.Uses().Repetitions {
			t.Errorf("%s: a distribution of K for a tuner with a fixed K", e.Tuner)
		}
	}
}

// The tuners' examples are tune's help as it was written out by hand: grid
// over the smallest built-in space.
func TestExamples(t *testing.T) {
	want := map[string]string{
		"gp":       "--space mnist-dphypo --mean-runs 10 --epsilon 8",
		"doubling": "--space mnist-doubling --epsilon 8",
		"grid":     "--space mnist-doubling --epochs 1 --epsilon 8",
	}
	for _, tu := range Tuners() {
		got := ""
		if e, ok := tu.(Exampler); ok {
			got = e.Example()
		}
		if got != want[tu.Name()] {
			t.Errorf("%s: example %q, want %q", tu.Name(), got, want[tu.Name()])
		}
	}
}

// A partitioned report's cost: every candidate on each of k parts, then the
// final run; epochs are passes over the full training set (a part is 1/k).
func TestDoublingReportCost(t *testing.T) {
	r := &DoublingReport{Partitions: 10, PartEpochs: 3, Epochs: 2}
	if runs, epochs := r.Cost(24); runs != 241 || epochs != 74 {
		t.Errorf("Cost(24) = %d runs, %v epochs, want 241 and 74", runs, epochs)
	}
	// The final run trains the selected candidate: its epochs, not the
	// flag's, when the space sets them.
	r.Selected = map[string]float64{Epochs: 20}
	if _, epochs := r.Cost(24); epochs != 24*3+20 {
		t.Errorf("with 20 selected epochs: %v training epochs, want %d", epochs, 24*3+20)
	}
}
