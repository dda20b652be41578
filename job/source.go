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
	// Load reads the training and test sets. The test set is treated as
	// public: test metrics are released without noise.
	Load func() (train, test *data.Dataset, err error)
}

// Datasets are the names Dataset knows.
var Datasets = []string{"mnist", "cifar10"}

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
		return Source{Name: name, Dir: dir, Arch: MNISTArch, NominalN: 60000, Load: func() (*data.Dataset, *data.Dataset, error) {
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
		return Source{Name: name, Dir: dir, Arch: CIFAR10Arch, NominalN: 50000, Load: func() (*data.Dataset, *data.Dataset, error) {
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
	if train.N != s.NominalN && warn != nil {
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
