package job

import (
	"context"
	"errors"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// noiseImages is n random 4×4 images with random labels.
func noiseImages(n int, seed uint64) *data.Dataset {
	rng := randsrc.Seeded(seed, "noise images")
	d := &data.Dataset{Name: "noise", N: n, C: 1, H: 4, W: 4, Classes: 10, X: make([]float32, n*16), Y: make([]uint8, n)}
	for i := range d.X {
		d.X[i] = rng.Float32()
	}
	for i := range d.Y {
		d.Y[i] = uint8(rng.IntN(10))
	}
	return d
}

// examples lists d's examples as comparable keys.
func examples(d *data.Dataset) []string {
	out := make([]string, d.N)
	for i := range out {
		b := []byte{d.Y[i]}
		for _, v := range d.Example(i) {
			b = append(b, byte(math.Float32bits(v)), byte(math.Float32bits(v)>>8), byte(math.Float32bits(v)>>16), byte(math.Float32bits(v)>>24))
		}
		out[i] = string(b)
	}
	return out
}

// A subset keeps about Fraction of the examples, and removing one example
// of the full set removes at most that example of the subset (add/remove
// adjacency carries over), which a permutation subset would not.
func TestSubsetIsKeyedByExample(t *testing.T) {
	full := noiseImages(4000, 1)
	u := Subset{Fraction: 0.25, Key: 7}
	sub, err := u.apply(full)
	if err != nil {
		t.Fatal(err)
	}
	// Binomial(4000, 1/4): mean 1000, standard deviation 27.4.
	if math.Abs(float64(sub.N)-1000) > 5*27.4 {
		t.Fatalf("subset of %d examples, want about 1000", sub.N)
	}
	whole, kept := examples(full), examples(sub)
	for _, j := range []int{0, 1, 1717, 3999} {
		idx := make([]int, 0, full.N-1)
		for i := 0; i < full.N; i++ {
			if i != j {
				idx = append(idx, i)
			}
		}
		got, err := u.apply(full.Subset("minus one", idx))
		if err != nil {
			t.Fatal(err)
		}
		want := slices.DeleteFunc(slices.Clone(kept), func(e string) bool { return e == whole[j] })
		if !slices.Equal(examples(got), want) {
			t.Errorf("removing example %d changed the subset beyond that example (%d → %d examples)", j, sub.N, got.N)
		}
	}
	other, _ := Subset{Fraction: 0.25, Key: 8}.apply(full)
	if slices.Equal(examples(other), kept) {
		t.Error("another key kept the same subset")
	}
}

// A runner job (dataRef.resolve, as a worker loads it) trains on exactly the
// subset the curator's Source loads; bad sizes are refused.
func TestWithSubsetSameInJobs(t *testing.T) {
	full, test := noiseImages(3000, 2), noiseImages(100, 3)
	dir := t.TempDir()
	cachePut(cacheKey(rawRef{"mnist", dir}), loaded{train: full, val: test})
	src := Source{Name: "mnist", Dir: dir, Arch: model.Arch{Spec: model.TBMNIST, C: 1, H: 28, W: 28, Classes: 10}, NominalN: 3000, Load: func() (*data.Dataset, *data.Dataset, error) { return full, test, nil }}
	sub, err := src.WithSubset(600, 9)
	if err != nil {
		t.Fatal(err)
	}
	train, gotTest, err := sub.Load()
	if err != nil {
		t.Fatal(err)
	}
	if sub.NominalN != 600 || gotTest != test || train.N == full.N {
		t.Fatalf("nominal %d, training set %d of %d, test set kept %v", sub.NominalN, train.N, full.N, gotTest == test)
	}
	ref := sub.ref()
	ref.Validation = "test"
	l, err := ref.resolve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(examples(l.train), examples(train)) {
		t.Errorf("the job's subset (%d examples) differs from the curator's (%d)", l.train.N, train.N)
	}
	for _, n := range []int{0, 3000, 4000} {
		if _, err := src.WithSubset(n, 9); !errors.Is(err, ErrInvalid) {
			t.Errorf("WithSubset(%d): %v, want ErrInvalid", n, err)
		}
	}
	if _, err := sub.WithSubset(100, 9); !errors.Is(err, ErrInvalid) {
		t.Errorf("a subset of a subset: %v, want ErrInvalid", err)
	}
}

// Every registered dataset gives a Source whose default network fits its
// inputs and whose default search space loads; the built-in ones keep the
// networks and sizes they were published with (Tramèr & Boneh's CNNs,
// 60,000 and 50,000 training examples).
func TestDatasetsFromRegistry(t *testing.T) {
	want := map[string]model.Arch{
		"mnist":         {Spec: model.TBMNIST, C: 1, H: 28, W: 28, Classes: 10},
		"cifar10":       {Spec: model.TBCIFAR10, C: 3, H: 32, W: 32, Classes: 10},
		"fashion-mnist": {Spec: model.TBMNIST, C: 1, H: 28, W: 28, Classes: 10},
	}
	sizes := map[string]int{"mnist": 60000, "cifar10": 50000, "fashion-mnist": 60000}
	if got := data.Names(); !slices.Equal(got, []string{"mnist", "cifar10", "fashion-mnist"}) {
		t.Fatalf("data.Names() = %v", got)
	}
	for _, name := range data.Names() {
		src, err := Dataset(name, t.TempDir())
		if err != nil {
			t.Fatalf("Dataset(%q): %v", name, err)
		}
		if _, err := src.WithModel(src.Arch.Spec); err != nil {
			t.Errorf("%s: the default network does not fit its inputs: %v", name, err)
		}
		if _, err := LoadSpace("", name); err != nil {
			t.Errorf("%s: default search space: %v", name, err)
		}
		if n, ok := NominalSize(name); !ok || n != src.NominalN || n != sizes[name] {
			t.Errorf("%s: NominalSize = %d, %v; source %d; want %d", name, n, ok, src.NominalN, sizes[name])
		}
		w := want[name]
		if !reflect.DeepEqual(src.Arch, w) {
			t.Errorf("%s: arch %+v, want %+v", name, src.Arch, w)
		}
	}
	for _, c := range []struct{ name, dir, want string }{
		{"svhn", "", `unknown dataset "svhn" (want mnist, cifar10 or fashion-mnist)`},
		{"cifar10", "", "a data directory is required for cifar10 (the directory holding its binary files)"},
	} {
		if _, err := Dataset(c.name, c.dir); !errors.Is(err, ErrInvalid) || err.Error() != c.want {
			t.Errorf("Dataset(%q, %q) = %v, want %q wrapping ErrInvalid", c.name, c.dir, err, c.want)
		}
	}
	if got := DatasetsWithoutDefaultDir(); !slices.Equal(got, []string{"cifar10"}) {
		t.Errorf("DatasetsWithoutDefaultDir() = %v, want [cifar10]", got)
	}
}
