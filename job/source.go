package job

import (
	"fmt"
	"path/filepath"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
)

// Source is a dataset as a job sees it before reading it: its name, the
// network for it, and its nominal size — the public size of the training
// set that every sampling rate, divisor and report uses, never a count of
// the private data (under add/remove adjacency the size is itself private).
// Load reads it; a count that differs from NominalN only draws a warning.
type Source struct {
	Name     string     // e.g. "mnist"; names the budget file's dataset
	Dir      string     // where the files are ("" for the built-in MNIST copy)
	Arch     model.Arch // the network trained on it
	NominalN int        // public size of the training set
	// Subset, if not nil, keeps a fixed subset of the training set (set by
	// WithSubset; Load already applies it).
	Subset *Subset
	// Load reads the training and test sets. The test set is treated as
	// public: test metrics are released without noise.
	Load func() (train, test *data.Dataset, err error)
}

// Datasets are the names Dataset knows.
var Datasets = []string{"mnist", "cifar10"}

// NominalSize returns the published training-set size of the built-in
// dataset called name (60,000 for mnist, 50,000 for cifar10), and false for
// another name.
func NominalSize(name string) (int, bool) {
	n, ok := map[string]int{"mnist": 60000, "cifar10": 50000}[name]
	return n, ok
}

// Default networks of the built-in datasets: Tramèr & Boneh's CNNs
// (model.TBMNIST, model.TBCIFAR10). Source.WithModel chooses another.
var (
	MNISTArch   = model.Arch{Spec: model.TBMNIST, C: 1, H: 28, W: 28, Classes: 10}
	CIFAR10Arch = model.Arch{Spec: model.TBCIFAR10, C: 3, H: 32, W: 32, Classes: 10}
)

// Dataset returns the Source of a built-in dataset: "mnist" (dir "" means the
// GoMNIST module's files in the Go module cache) or "cifar10" (dir
// required), with the published nominal size (60,000 or 50,000) and the
// default network (MNISTArch, CIFAR10Arch). It returns an error wrapping
// ErrInvalid for an unknown name or a missing directory.
func Dataset(name, dir string) (Source, error) {
	switch name {
	case "mnist":
		n, _ := NominalSize(name)
		return Source{Name: name, Dir: dir, Arch: MNISTArch, NominalN: n, Load: func() (*data.Dataset, *data.Dataset, error) {
			d := dir
			if d == "" {
				var err error
				if d, err = data.MNISTDir(); err != nil {
					return nil, nil, err
				}
			}
			return wrapLoad(name, d, data.LoadMNIST)
		}}, nil
	case "cifar10":
		if dir == "" {
			return Source{}, invalidf("a data directory is required for cifar10 (the directory holding its binary files)")
		}
		n, _ := NominalSize(name)
		return Source{Name: name, Dir: dir, Arch: CIFAR10Arch, NominalN: n, Load: func() (*data.Dataset, *data.Dataset, error) {
			return wrapLoad(name, dir, data.LoadCIFAR10)
		}}, nil
	}
	return Source{}, invalidf("unknown dataset %q (want mnist or cifar10)", name)
}

func wrapLoad(name, dir string, load func(string) (*data.Dataset, *data.Dataset, error)) (*data.Dataset, *data.Dataset, error) {
	train, test, err := load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("loading %s: %w", name, err)
	}
	return train, test, nil
}

// WithNominalSize returns s with the declared nominal size n, for data of
// one's own in the dataset's format.
func (s Source) WithNominalSize(n int) Source {
	s.NominalN = n
	return s
}

// Subset is a fixed subset of a training set, for runs that must cost less
// than the full set: an example is kept when a hash of the example itself
// (label and pixels) keyed with Key falls in the first Fraction of the
// hash's range (data.KeyedSplit). Membership depends on nothing but the
// example, so adding or removing one example of the full set adds or
// removes at most that example of the subset: a guarantee about the subset
// is one about the full set under add/remove adjacency. Its size is
// binomial, about Fraction of the full set; the subset's nominal size is
// the public n WithSubset was given.
type Subset struct {
	Fraction float64 `json:"fraction"`
	Key      uint64  `json:"key"`
}

// apply returns the subset of train.
func (u Subset) apply(train *data.Dataset) (*data.Dataset, error) {
	parts, err := data.KeyedSplit(train, []float64{u.Fraction, 1 - u.Fraction}, u.Key)
	if err != nil {
		return nil, err
	}
	parts[0].Name = train.Name + "/subset"
	return parts[0], nil
}

// WithSubset returns s training on a fixed subset of about n of its
// NominalN training examples (Subset, keyed with key), with nominal size n;
// the test set is unchanged. The key need not be secret: membership is a
// public function of each example. It returns an error wrapping ErrInvalid
// unless 1 ≤ n < NominalN, or if s is a subset already.
func (s Source) WithSubset(n int, key uint64) (Source, error) {
	switch {
	case s.Load == nil:
		return s, invalidf("dataset %q has no loader", s.Name)
	case s.Subset != nil:
		return s, invalidf("%s is a subset already", s.Name)
	case n < 1 || n >= s.NominalN:
		return s, invalidf("a subset of %d examples of %s is outside [1, %d)", n, s.Name, s.NominalN)
	}
	u := Subset{Fraction: float64(n) / float64(s.NominalN), Key: key}
	load := s.Load
	s.Load = func() (*data.Dataset, *data.Dataset, error) {
		train, test, err := load()
		if err != nil {
			return nil, nil, err
		}
		if train, err = u.apply(train); err != nil {
			return nil, nil, err
		}
		return train, test, nil
	}
	s.Subset, s.NominalN = &u, n
	return s, nil
}

// ref is the part of a job's dataRef that names s.
func (s Source) ref() dataRef {
	return dataRef{Dataset: s.Name, Dir: s.Dir, NominalN: s.NominalN, Subset: s.Subset}
}

// WithModel returns s training the network spec on the same inputs, or an
// error wrapping ErrInvalid naming the first layer whose shape does not
// fit them.
func (s Source) WithModel(spec model.Spec) (Source, error) {
	a, err := model.NewArch(spec, s.Arch.C, s.Arch.H, s.Arch.W, s.Arch.Classes)
	if err != nil {
		return s, invalidf("%v", err)
	}
	s.Arch = a
	return s, nil
}

// Check returns an error wrapping ErrInvalid unless s can be loaded and has
// a nominal size in [1, 2³¹].
func (s Source) Check() error {
	switch {
	case s.Load == nil:
		return invalidf("dataset %q has no loader", s.Name)
	case s.NominalN < 1 || s.NominalN > 1<<31:
		return invalidf("nominal size %d of %s is outside [1, 2^31]", s.NominalN, s.Name)
	}
	return nil
}

// load reads s, warning when the training set's count differs from the
// nominal size (the count itself goes only to the curator's warn).
func (s Source) load(warn func(string)) (train, test *data.Dataset, err error) {
	train, test, err = s.Load()
	if err != nil {
		return nil, nil, err
	}
	// A subset's count is binomial around its nominal size by design.
	if train.N != s.NominalN && s.Subset == nil && warn != nil {
		where := s.Dir
		if where == "" {
			where = s.Name
		}
		warn(fmt.Sprintf("%s holds %d training examples, not the nominal %d; sampling rates and divisors use the nominal size (curator-side note)", where, train.N, s.NominalN))
	}
	return train, test, nil
}

// sameDir reports whether two data directories are the same directory.
func sameDir(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	x, err1 := filepath.Abs(a)
	y, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && x == y
}
