package data

import (
	"math"
	"testing"
)

// KeyedSplit's parts are disjoint and cover the set, have about the asked
// fractions, and adding one example changes only the part it joins.
func TestKeyedSplit(t *testing.T) {
	n := 3000
	d := &Dataset{Name: "t", X: make([]float32, n*4), Y: make([]uint8, n), N: n, C: 1, H: 2, W: 2, Classes: 10}
	for i := 0; i < n; i++ {
		d.Y[i] = uint8(i % 10)
		for j := 0; j < 4; j++ {
			d.X[i*4+j] = float32(i) + float32(j)/10 // each example distinct; X[i*4] identifies it
		}
	}
	fr := []float64{0.1, 0.3, 0.6}
	parts, err := KeyedSplit(d, fr, 42)
	if err != nil {
		t.Fatal(err)
	}
	where := map[float32]int{}
	for p, part := range parts {
		if got := float64(part.N) / float64(n); math.Abs(got-fr[p]) > 4*math.Sqrt(fr[p]*(1-fr[p])/float64(n)) {
			t.Errorf("part %d holds %.3f of the examples, want about %v", p, got, fr[p])
		}
		for i := 0; i < part.N; i++ {
			if _, dup := where[part.X[i*4]]; dup {
				t.Fatalf("example %v in two parts", part.X[i*4])
			}
			where[part.X[i*4]] = p
		}
	}
	if len(where) != n {
		t.Fatalf("%d of %d examples placed", len(where), n)
	}
	// Remove the first example: every other example stays in its part.
	rest := d.Subset("rest", func() []int {
		idx := make([]int, n-1)
		for i := range idx {
			idx[i] = i + 1
		}
		return idx
	}())
	parts2, _ := KeyedSplit(rest, fr, 42)
	for p, part := range parts2 {
		for i := 0; i < part.N; i++ {
			if where[part.X[i*4]] != p {
				t.Fatalf("removing one example moved example %v from part %d to %d", part.X[i*4], where[part.X[i*4]], p)
			}
		}
	}
	// Another key, another split.
	parts3, _ := KeyedSplit(d, fr, 43)
	if parts3[0].N == parts[0].N && parts3[1].N == parts[1].N {
		t.Error("the key does not change the split")
	}
	if _, err := KeyedSplit(d, []float64{0.5, 0}, 1); err == nil {
		t.Error("a zero fraction accepted")
	}
}
