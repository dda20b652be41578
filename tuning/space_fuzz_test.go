package tuning

import (
	"encoding/json"
	"testing"
)

// FuzzParseSpace checks that ParseSpace never panics and that a space it
// accepts is within MaxCandidates and indexable.
func FuzzParseSpace(f *testing.F) {
	for _, name := range []string{"mnist-dphypo", "cifar10-dphypo", "mnist-doubling"} {
		s, _ := BuiltinSpace(name)
		b, err := json.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, seed := range []string{
		`{"name":"g","dims":[{"name":"learning_rate","min":0.01,"max":1,"count":5,"log":true},{"name":"clip_norm","min":0.5,"max":4,"count":8}]}`,
		`{"name":"x","dims":[{"name":"learning_rate","min":0.1,"max":1,"count":100000000000}]}`,
		`{"dims":[{"name":"a","values":[1,2],"min":1}]}`,
		`{"dims":[{"name":"a","values":[1]}]} trailing`,
		`{"dims":[{"name":"a","values":[1e400]}]}`,
		`{"dims":[{"name":"a","min":-1e308,"max":1e308,"count":3}]}`,
		`{"dims":[`,
		`[]`,
		`null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSpace("fuzz.json", b)
		if err != nil {
			return
		}
		n, err := s.CheckedSize()
		if err != nil || n < 1 || n > MaxCandidates || s.Size() != n {
			t.Fatalf("accepted space of %d candidates (Size %d): %v", n, s.Size(), err)
		}
		if err := s.Check(); err != nil {
			t.Fatalf("accepted space fails Check: %v", err)
		}
		for _, i := range []int{0, 1, n / 2, n - 1} {
			if i >= n {
				continue
			}
			c := s.At(i)
			if c.Index != i || len(c.Values) != len(s.Dims) {
				t.Fatalf("At(%d) = %+v", i, c)
			}
			for _, x := range s.Coords(i) {
				if !(x >= 0 && x <= 1) {
					t.Fatalf("Coords(%d) = %v", i, s.Coords(i))
				}
			}
		}
	})
}
