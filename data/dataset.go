package data

import (
	"fmt"
	"math/rand/v2"
)

// Dataset is N labelled images stored as a dense float32 tensor.
type Dataset struct {
	// Name says where the data came from, e.g. "mnist/train".
	Name string
	// X holds the images, shape [N, C, H, W], row-major; len(X) == N*C*H*W.
	X []float32
	// Y holds the labels, len(Y) == N, each in [0, Classes).
	Y []uint8
	// N, C, H, W are the tensor's dimensions; Classes the number of labels.
	N, C, H, W, Classes int
}

// ExampleSize is the number of floats in one example: C*H*W.
func (d *Dataset) ExampleSize() int { return d.C * d.H * d.W }

// Example returns example i as a [C, H, W] slice of X (not a copy).
func (d *Dataset) Example(i int) []float32 {
	s := d.ExampleSize()
	return d.X[i*s : (i+1)*s]
}

// Subset returns a new Dataset holding copies of the examples idx, in that order.
func (d *Dataset) Subset(name string, idx []int) *Dataset {
	s := d.ExampleSize()
	out := &Dataset{Name: name, X: make([]float32, len(idx)*s), Y: make([]uint8, len(idx)),
		N: len(idx), C: d.C, H: d.H, W: d.W, Classes: d.Classes}
	for j, i := range idx {
		copy(out.X[j*s:(j+1)*s], d.Example(i))
		out.Y[j] = d.Y[i]
	}
	return out
}

// Normalize maps every value v of channel c to (v − mean[c]) / std[c], in place.
// It returns an error if mean and std do not have one entry per channel or a
// std is not positive.
func (d *Dataset) Normalize(mean, std []float64) error {
	if len(mean) != d.C || len(std) != d.C {
		return fmt.Errorf("normalize %s: need %d means and standard deviations, got %d and %d", d.Name, d.C, len(mean), len(std))
	}
	plane := d.H * d.W
	for c := 0; c < d.C; c++ {
		if !(std[c] > 0) {
			return fmt.Errorf("normalize %s: standard deviation of channel %d is %v, must be > 0", d.Name, c, std[c])
		}
		m, inv := float32(mean[c]), float32(1/std[c])
		for i := 0; i < d.N; i++ {
			p := d.X[(i*d.C+c)*plane : (i*d.C+c+1)*plane]
			for k := range p {
				p[k] = (p[k] - m) * inv
			}
		}
	}
	return nil
}

// Split divides d into a training part and a validation part of nVal examples,
// chosen uniformly at random by rng (a seeded permutation). Both parts are copies.
// It returns an error unless 0 ≤ nVal ≤ N.
func Split(d *Dataset, nVal int, rng *rand.Rand) (train, val *Dataset, err error) {
	if nVal < 0 || nVal > d.N {
		return nil, nil, fmt.Errorf("split %s: validation size %d is outside [0, %d]", d.Name, nVal, d.N)
	}
	perm := rng.Perm(d.N)
	val = d.Subset(d.Name+"/validation", perm[:nVal])
	train = d.Subset(d.Name+"/train", perm[nVal:])
	return train, val, nil
}

// validate checks the invariants of a Dataset built by a loader.
func (d *Dataset) validate() error {
	if d.N < 0 || len(d.Y) != d.N || len(d.X) != d.N*d.ExampleSize() {
		return fmt.Errorf("%s: inconsistent dataset (N=%d, %d labels, %d values for %d×%d×%d images)",
			d.Name, d.N, len(d.Y), len(d.X), d.C, d.H, d.W)
	}
	for i, y := range d.Y {
		if int(y) >= d.Classes {
			return fmt.Errorf("%s: label %d of example %d is outside [0, %d)", d.Name, y, i, d.Classes)
		}
	}
	return nil
}
