package space

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Candidate i is the same point wherever the space travels: the first
// dimension varies slowest, and the JSON a tuner writes (a vote's job
// carries it to the clients) parses back to the same space.
func TestCandidateOrderAndJSON(t *testing.T) {
	s := Space{Name: "two", Dims: []Dim{
		{Name: "learning_rate", Values: []float64{0.01, 0.1}, Log: true},
		{Name: "momentum", Values: []float64{0, 0.5, 0.9}},
	}}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	want := []map[string]float64{
		{"learning_rate": 0.01, "momentum": 0}, {"learning_rate": 0.01, "momentum": 0.5}, {"learning_rate": 0.01, "momentum": 0.9},
		{"learning_rate": 0.1, "momentum": 0}, {"learning_rate": 0.1, "momentum": 0.5}, {"learning_rate": 0.1, "momentum": 0.9},
	}
	if s.Size() != len(want) {
		t.Fatalf("size %d, want %d", s.Size(), len(want))
	}
	for i, w := range want {
		if c := s.At(i); c.Index != i || !reflect.DeepEqual(c.Values, w) || c.Labels != nil {
			t.Errorf("candidate %d: %+v, want %v", i, c, w)
		}
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"name":"two","dims":[{"name":"learning_rate","values":[0.01,0.1],"log":true},{"name":"momentum","values":[0,0.5,0.9],"log":false}]}` {
		t.Errorf("JSON %s", got)
	}
	back, err := ParseSpace("two.json", b)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Errorf("parsed back %+v, %v; want %+v", back, err, s)
	}
}

// A categorical dimension's candidates carry the choice's name beside its
// index.
func TestCategoricalLabels(t *testing.T) {
	s := Space{Name: "nets", Dims: []Dim{Categorical("network", "a", "b")}}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	if c := s.At(1); c.Values["network"] != 1 || c.Labels["network"] != "b" {
		t.Errorf("candidate 1: %+v", c)
	}
}
