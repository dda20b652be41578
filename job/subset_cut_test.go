package job

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/runner"
)

// within5sd fails unless got is within 5 standard deviations of a
// Binomial(n, p) count.
func within5sd(t *testing.T, what string, got, n int, p float64) {
	t.Helper()
	mean, sd := p*float64(n), math.Sqrt(float64(n)*p*(1-p))
	if math.Abs(float64(got)-mean) > 5*sd {
		t.Errorf("%s: %d, want Binomial(%d, %.4g) = %.0f ± %.0f", what, got, n, p, mean, 5*sd)
	}
}

// A tuning subset as a worker resolves it from a job's dataRef: about q of
// MNIST's 60,000 training examples, seeded or keyed alike, the private
// validation split inside it at the nominal fraction ValSize/NominalN, the
// two disjoint.
func TestTuningSubsetCut(t *testing.T) {
	key := randsrc.NewKey()
	for name, k := range map[string]cutKey{"seeded": {Seeded: 4}, "keyed": {MAC: &key}} {
		ref := dataRef{Dataset: "mnist", NominalN: 55000, Validation: "private", ValSize: 5000, SplitKey: cutKey{Seeded: 3},
			Subsample: 0.1, SubsampleKey: k}
		l, err := ref.resolve(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		within5sd(t, name+": subset", l.train.N+l.val.N, 60000, 0.1)
		within5sd(t, name+": its validation split", l.val.N, l.train.N+l.val.N, 5000.0/55000)
		seen := map[float32]bool{}
		size := l.train.ExampleSize()
		sum := func(x []float32) (s float32) {
			for _, v := range x {
				s += v * v
			}
			return s
		}
		for i := 0; i < l.val.N; i++ {
			seen[sum(l.val.X[i*size:(i+1)*size])] = true
		}
		shared := 0
		for i := 0; i < l.train.N; i++ {
			if seen[sum(l.train.X[i*size:(i+1)*size])] {
				shared++
			}
		}
		if shared > l.val.N/20 { // equal sums of squares between distinct digits are rare
			t.Errorf("%s: %d training examples look like validation examples", name, shared)
		}
	}
}

// A development split holds out about nDev training examples as the test
// set and trains on the rest, at nominal size NominalN − nDev; the same
// split as a worker's dataRef resolves it.
func TestDevSplit(t *testing.T) {
	src, err := Dataset("mnist", "")
	if err != nil {
		t.Fatal(err)
	}
	dev, err := src.WithDevSplit(10000, 1)
	if err != nil {
		t.Fatal(err)
	}
	train, test, err := dev.Load()
	if err != nil {
		t.Fatal(err)
	}
	if train.N+test.N != 60000 || dev.NominalN != 50000 {
		t.Fatalf("%d + %d examples (nominal %d), want MNIST's 60,000 training examples cut, nominal 50,000", train.N, test.N, dev.NominalN)
	}
	within5sd(t, "held out", test.N, 60000, 10000.0/60000)
	wtrain, wtest, err := dev.ref().raw()
	if err != nil {
		t.Fatal(err)
	}
	if wtrain.N != train.N || wtest.N != test.N {
		t.Errorf("a worker's copy has %d + %d examples, the curator's %d + %d", wtrain.N, wtest.N, train.N, test.N)
	}
	for _, n := range []int{0, 60000, -1} {
		if _, err := src.WithDevSplit(n, 1); err == nil {
			t.Errorf("a development split of %d accepted", n)
		}
	}
	if _, err := dev.WithDevSplit(100, 1); err == nil {
		t.Error("a development split of a development split accepted")
	}
}

// The tuning subset is drawn on the images as read and applied to their
// features by position: features that differ in their last bits (another
// machine's arithmetic) keep the same examples. A hostile ratio in a job's
// input is refused as invalid input (never retried).
func TestTuningSubsetDrawnOnImages(t *testing.T) {
	raw := poissonImages(4000)
	feat := poissonImages(4000)
	for i := range feat.X {
		feat.X[i] = math.Nextafter32(feat.X[i]*3, 1e9) // another "machine"'s features
	}
	ref := dataRef{Subsample: 0.2, SubsampleKey: cutKey{Seeded: 11}}
	a, err := ref.subset(raw, feat)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ref.subset(raw, poissonImages(4000))
	if err != nil {
		t.Fatal(err)
	}
	if a.N != b.N {
		t.Fatalf("%d and %d examples kept from the same images", a.N, b.N)
	}
	for i := 0; i < a.N; i++ {
		if a.Y[i] != b.Y[i] || a.X[i] != math.Nextafter32(b.X[i]*3, 1e9) {
			t.Fatalf("example %d of the subset differs between the two feature sets", i)
		}
	}
	within5sd(t, "kept", a.N, 4000, 0.2)
	for _, q := range []float64{-1, 2, math.NaN()} {
		ref.Subsample = q
		if _, err := ref.subset(raw, feat); !errors.Is(err, runner.ErrInvalidInput) {
			t.Errorf("ratio %v: %v, want invalid input", q, err)
		}
	}
}

// poissonImages is n distinct one-pixel examples.
func poissonImages(n int) *data.Dataset {
	d := &data.Dataset{Name: "imgs", X: make([]float32, n), Y: make([]uint8, n), N: n, C: 1, H: 1, W: 1, Classes: 10}
	for i := range d.Y {
		d.X[i], d.Y[i] = float32(i)/7, uint8(i%10)
	}
	return d
}
