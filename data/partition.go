package data

import (
	"fmt"
	"math/rand/v2"
)

// Partition splits d into k disjoint parts that together hold every example
// once, with sizes differing by at most one (the first N mod k parts get one
// more), after a permutation drawn from rng. Parts are copies named
// "NAME/part-i".
//
// Under replace-one adjacency one example affects one part only, as
// subsample-and-aggregate (Nissim, Raskhodnikova, Smith 2007) needs. Under
// add/remove adjacency it does not: an added example shifts the permutation
// and the balanced sizes, so examples move between parts. DP analyses under
// add/remove (dptune's) use KeyedSplit instead.
func Partition(d *Dataset, k int, rng *rand.Rand) ([]*Dataset, error) {
	if k < 1 || k > d.N {
		return nil, fmt.Errorf("partition %s: %d parts of %d examples", d.Name, k, d.N)
	}
	perm := rng.Perm(d.N)
	parts := make([]*Dataset, k)
	start := 0
	for i := range parts {
		size := d.N / k
		if i < d.N%k {
			size++
		}
		parts[i] = d.Subset(fmt.Sprintf("%s/part-%d", d.Name, i+1), perm[start:start+size])
		start += size
	}
	return parts, nil
}
