package job

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/tuning"
)

// voteSpaceOf is s as LoadVoteSpace returns it, read back from a JSON file.
func voteSpaceOf(t *testing.T, s tuning.Space) tuning.Space {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "space.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := LoadVoteSpace(path)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The vote's space is the search space tuning reads: the same JSON on the
// wire, and candidate i is tuning's candidate i.
func TestLoadVoteSpaceMatchesTuning(t *testing.T) {
	s := tuning.Space{Name: "three", Dims: []tuning.Dim{
		{Name: federated.LearningRate, Values: []float64{1e-3, 0.01, 0.1}, Log: true},
		{Name: federated.LRDecay, Values: []float64{1, 0.5}},
		{Name: federated.Momentum, Values: []float64{0, 0.5, 0.9, 0.99}},
	}}
	v := voteSpaceOf(t, s)
	if err := federated.CheckSpace(v); err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(s)
	got, _ := json.Marshal(v)
	if !bytes.Equal(got, want) {
		t.Fatalf("JSON %s, want %s", got, want)
	}
	if v.Size() != s.Size() {
		t.Fatalf("size %d, want %d", v.Size(), s.Size())
	}
	for i := range s.Size() {
		if got, want := v.At(i).Values, s.At(i).Values; !reflect.DeepEqual(got, want) {
			t.Fatalf("candidate %d: %v, want %v", i, got, want)
		}
	}
	if d, err := LoadVoteSpace(""); err != nil || d.Name != federated.MNISTSpace.Name {
		t.Fatalf(`LoadVoteSpace(""): %v, %v; want %s`, d.Name, err, federated.MNISTSpace.Name)
	}
}

// A space the vote refuses for a reason any search space is refused gets
// tuning's error, word for word.
func TestCheckVoteSpaceGenericErrorsMatchTuning(t *testing.T) {
	lr := func(v ...float64) tuning.Dim { return tuning.Dim{Name: federated.LearningRate, Values: v} }
	big := make([]float64, 1<<11)
	for i := range big {
		big[i] = float64(i+1) / float64(len(big)+1)
	}
	for _, s := range []tuning.Space{
		{Name: "bell\a"},
		{Name: "s", Dims: []tuning.Dim{{Name: "m\x1b[2J", Values: []float64{0}}}},
		{Name: "s", Dims: []tuning.Dim{{Name: "\xff", Values: []float64{0}}}},
		{Name: "empty"},
		{Name: "s", Dims: []tuning.Dim{lr(0.1), lr(0.2)}},
		{Name: "s", Dims: []tuning.Dim{lr(0.1), {Values: []float64{0}}}},
		{Name: "s", Dims: []tuning.Dim{lr()}},
		{Name: "s", Dims: []tuning.Dim{lr(0.1, math.NaN())}},
		{Name: "s", Dims: []tuning.Dim{lr(0.1, math.Inf(1))}},
		{Name: "s", Dims: []tuning.Dim{{Name: federated.Momentum, Values: []float64{0}, Log: true}, lr(0.1)}},
		{Name: "s", Dims: []tuning.Dim{lr(big...), {Name: federated.Momentum, Values: big[:512]}, {Name: federated.LRDecay, Values: big[:2]}}},
	} {
		want := s.Check()
		if want == nil {
			t.Fatalf("%+v: tuning accepts it", s)
		}
		v, err := tuning.VoteSpace(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := federated.CheckSpace(v); err == nil || err.Error() != want.Error() {
			t.Errorf("%q: %v, want %v", s.Name, err, want)
		}
	}
}
