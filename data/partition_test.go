package data

import (
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
)

// Parts are disjoint, cover the set, and differ in size by at most one.
func TestPartition(t *testing.T) {
	n := 103
	d := &Dataset{Name: "t", X: make([]float32, n), Y: make([]uint8, n), N: n, C: 1, H: 1, W: 1, Classes: 10}
	for i := range d.X {
		d.X[i] = float32(i) // each example is its index
	}
	for _, k := range []int{1, 2, 10, 103} {
		parts, err := Partition(d, k, randsrc.Seeded(1, "test"))
		if err != nil {
			t.Fatal(err)
		}
		seen := make([]int, n)
		lo, hi := n, 0
		for _, p := range parts {
			lo, hi = min(lo, p.N), max(hi, p.N)
			for _, x := range p.X {
				seen[int(x)]++
			}
		}
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("k=%d: example %d in %d parts", k, i, c)
			}
		}
		if hi-lo > 1 || len(parts) != k {
			t.Fatalf("k=%d: sizes %d…%d", k, lo, hi)
		}
	}
	if _, err := Partition(d, 0, randsrc.Seeded(1, "t")); err == nil {
		t.Error("0 parts accepted")
	}
	if _, err := Partition(d, n+1, randsrc.Seeded(1, "t")); err == nil {
		t.Error("more parts than examples accepted")
	}
}
