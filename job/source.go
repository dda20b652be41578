package job

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/model/features"
	"github.com/dptune/dptune/tuning"
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
	// Input names the classes and the pixels' normalisation (public),
	// saved with every model trained on it.
	Input model.Input
	// folder, for an image folder, is how it is read (kept by a
	// checkpoint); loadContext, if not nil, is Load stopping with ctx's
	// error soon after ctx is cancelled (an image folder's decoding), and
	// telling warn, if not nil, what it left out of the private training
	// split (a curator-side note).
	folder      *FolderSettings
	loadContext func(ctx context.Context, warn func(string)) (train, test *data.Dataset, err error)
	// read, for an image folder, is how a job's worker reads it (its
	// settings resolved); check, when the jobs run on workers
	// (ForRunner), keeps the keyed digest of what Load last read.
	read  *folderRef
	check *contentCheck
	// Features says where the features of a network with a fixed front
	// end (a scatter first layer, model.Arch.FrontEnd) are kept; the job
	// trains and evaluates on them in place of the images.
	Features FeatureCache
}

// FeatureCache is where a job keeps the features of a network's fixed
// front end (package model/features): computed once per dataset and
// transform with every core, then read back by every later run. The
// transform is data-independent, so the features cost no privacy, but the
// cache holds the private training data, transformed: Dir is a curator
// directory (created 0700, files 0600), and nothing in it is released.
type FeatureCache struct {
	// Dir is the cache directory; "" computes the features in memory on
	// every run.
	Dir string
	// Progress, if not nil, is called while features are computed, with
	// the examples done and the total, and the set's name ("train" or
	// "test").
	Progress func(set string, done, total int)
}

// DefaultFeatureCache is the default feature cache directory: dptune/features
// under the user's cache directory (os.UserCacheDir), or "" when there is none.
func DefaultFeatureCache() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "dptune", "features")
}

// NominalSize returns the published training-set size of the registered
// dataset called name (60,000 for mnist, 50,000 for cifar10), and false for
// another name.
func NominalSize(name string) (int, bool) {
	k, ok := data.Lookup(name)
	return k.NominalN, ok
}

// TestSize returns the published test-set size of the registered dataset
// called name (10,000 for mnist and cifar10), and false for another name.
func TestSize(name string) (int, bool) {
	k, ok := data.Lookup(name)
	return k.TestN, ok && k.TestN > 0
}

// NominalSizeHelp lists the registered datasets' published sizes for a
// flag's help: "60000 for mnist, 50000 for cifar10".
func NominalSizeHelp() string {
	return datasetList(func(k data.Named) string { return fmt.Sprintf("%d for %s", k.NominalN, k.Name) })
}

// DefaultModelHelp lists the registered datasets' default networks for a
// flag's help: "tb-mnist for mnist, tb-cifar10 for cifar10".
func DefaultModelHelp() string {
	return datasetList(func(k data.Named) string { return k.Model + " for " + k.Name })
}

// DefaultDirHelp lists where the registered datasets with a default
// directory look for their files, for a flag's help: "for mnist: the
// GoMNIST module in the Go module cache".
func DefaultDirHelp() string {
	return datasetList(func(k data.Named) string {
		if k.DefaultDir == nil {
			return ""
		}
		return "for " + k.Name + ": " + k.DefaultDirHelp
	})
}

// datasetList is f of each registered dataset, by rank, joined by ", ";
// empty answers are left out.
func datasetList(f func(data.Named) string) string {
	var parts []string
	for _, name := range data.Names() {
		k, _ := data.Lookup(name)
		if s := f(k); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ", ")
}

// Dataset returns the Source of a registered dataset (data.Register):
// "mnist" (dir "" means the GoMNIST module's files in the Go module cache)
// or "cifar10" (dir required), with its published nominal size (60,000 or
// 50,000) and its default network (Tramèr & Boneh's CNNs, model.TBMNIST and
// model.TBCIFAR10). It returns an error wrapping ErrInvalid for an unknown
// name or a missing directory.
func Dataset(name, dir string) (Source, error) {
	k, ok := data.Lookup(name)
	switch {
	case !ok:
		return Source{}, invalidf("unknown dataset %q (want %s)", name, data.NamesList())
	case dir == "" && k.DefaultDir == nil:
		return Source{}, invalidf("a data directory is required for %s (%s)", name, k.DirHelp)
	case dir == "":
		// Files missing from their default home (a package not installed)
		// are refused before any work, not when the data is read.
		if _, err := k.DefaultDir(); err != nil {
			return Source{}, invalid(err)
		}
	}
	spec, err := model.SpecByName(k.Model)
	if err != nil {
		return Source{}, fmt.Errorf("dataset %s: default network: %w", name, err)
	}
	arch := model.Arch{Spec: spec, C: k.C, H: k.H, W: k.W, Classes: k.Classes}
	input := model.Input{Dataset: name, Classes: k.ClassNames, Mean: k.Mean, Std: k.Std}
	return Source{Name: name, Dir: dir, Arch: arch, NominalN: k.NominalN, Input: input, Load: func() (*data.Dataset, *data.Dataset, error) {
		d := dir
		if d == "" {
			var err error
			if d, err = k.DefaultDir(); err != nil {
				return nil, nil, err
			}
		}
		return wrapLoad(name, d, k.Load)
	}}, nil
}

// DatasetsWithoutDefaultDir lists the registered datasets whose files
// have no default directory (cifar10): Dataset needs one named.
func DatasetsWithoutDefaultDir() []string {
	var out []string
	for _, name := range data.Names() {
		if k, _ := data.Lookup(name); k.DefaultDir == nil {
			out = append(out, name)
		}
	}
	return out
}

// WorkerDataDirs makes this process's jobs read every registered dataset
// that has no default directory (DatasetsWithoutDefaultDir), and an image
// folder, from dir instead of the directory the curator named
// (WorkerDataDir): a worker whose copy of the data lives elsewhere. The
// jobs of a curator whose tasks run on workers check the copy read there
// against the curator's (a keyed digest of the content), and refuse one
// that differs.
func WorkerDataDirs(dir string) {
	for _, name := range append(DatasetsWithoutDefaultDir(), FolderName) {
		WorkerDataDir(name, dir)
	}
}

// LoadSpace loads the search space called name (a built-in space or a JSON
// file, tuning.LoadSpace); an empty name means the registered dataset's
// default space (DP-HyPO's grid for mnist and cifar10). It returns an error
// wrapping ErrInvalid for a space that cannot be loaded.
func LoadSpace(name, dataset string) (tuning.Space, error) {
	if name == "" {
		k, _ := data.Lookup(dataset)
		name = k.Space
	}
	s, err := tuning.LoadSpace(name)
	if err != nil {
		return s, invalid(err)
	}
	return s, nil
}

// DefaultSpaceName is the search space a tuning of src takes when none is
// named: "scatter-<dataset>" (tuning's ScatterNet spaces) for a network
// with a ScatterNet front end when one is registered, else the dataset's
// default ("" for LoadSpace). An image folder counts as mnist when its
// network reads one channel and as cifar10 otherwise.
func DefaultSpaceName(src Source) string {
	name := src.Name
	if _, ok := data.Lookup(name); !ok {
		name = "cifar10"
		if src.Arch.C == 1 {
			name = "mnist"
		}
	}
	if _, ok := src.Arch.FrontEnd(); ok {
		if _, ok := tuning.BuiltinSpace("scatter-" + name); ok {
			return "scatter-" + name
		}
	}
	if name != src.Name {
		k, _ := data.Lookup(name)
		return k.Space
	}
	return ""
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
	// Dev says the rest of the training set stands for the test set
	// (WithDevSplit): a development split, so that settings are chosen
	// without reading the test set.
	Dev bool `json:"dev,omitempty"`
}

// apply returns the subset of train.
func (u Subset) apply(train *data.Dataset) (*data.Dataset, error) {
	kept, _, err := u.cut(train)
	return kept, err
}

// cut returns the subset of train and the rest.
func (u Subset) cut(train *data.Dataset) (kept, rest *data.Dataset, err error) {
	parts, err := data.KeyedSplit(train, []float64{u.Fraction, 1 - u.Fraction}, u.Key)
	if err != nil {
		return nil, nil, err
	}
	parts[0].Name, parts[1].Name = train.Name+"/subset", train.Name+"/held-out"
	return parts[0], parts[1], nil
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
	s = s.cutLoads(func(train, test *data.Dataset) (*data.Dataset, *data.Dataset, error) {
		train, err := u.apply(train)
		if err != nil {
			return nil, nil, err
		}
		return train, test, nil
	})
	s.Subset, s.NominalN, s.check = &u, n, nil
	return s, nil
}

// WithDevSplit returns s with about nDev of its NominalN training examples
// held out as its test set (a development split: Subset with Dev, keyed
// with key, public) and the rest its training set, of nominal size
// NominalN − nDev; the real test set is never read. Settings chosen on
// such a split's accuracies leave the test set unseen, as a recommended
// configuration must. The accuracies on the held-out examples are not
// private releases (no noise): a development split is for public
// benchmarks, never for private data. It returns an error wrapping
// ErrInvalid unless
// 1 ≤ nDev < NominalN, or if s is a subset already.
func (s Source) WithDevSplit(nDev int, key uint64) (Source, error) {
	switch {
	case s.Load == nil:
		return s, invalidf("dataset %q has no loader", s.Name)
	case s.Subset != nil:
		return s, invalidf("%s is a subset already", s.Name)
	case nDev < 1 || nDev >= s.NominalN:
		return s, invalidf("a development split of %d examples of %s is outside [1, %d)", nDev, s.Name, s.NominalN)
	}
	n := s.NominalN - nDev
	u := Subset{Fraction: float64(n) / float64(s.NominalN), Key: key, Dev: true}
	s = s.cutLoads(func(train, _ *data.Dataset) (*data.Dataset, *data.Dataset, error) { return u.cut(train) })
	s.Subset, s.NominalN, s.check = &u, n, nil
	return s, nil
}

// cutLoads returns s with both its loaders (Load, and loadContext, which
// an image folder reads through) giving cut of what they read.
func (s Source) cutLoads(cut func(train, test *data.Dataset) (*data.Dataset, *data.Dataset, error)) Source {
	if load := s.Load; load != nil {
		s.Load = func() (*data.Dataset, *data.Dataset, error) {
			train, test, err := load()
			if err != nil {
				return nil, nil, err
			}
			return cut(train, test)
		}
	}
	if load := s.loadContext; load != nil {
		s.loadContext = func(ctx context.Context, warn func(string)) (*data.Dataset, *data.Dataset, error) {
			train, test, err := load(ctx, warn)
			if err != nil {
				return nil, nil, err
			}
			return cut(train, test)
		}
	}
	return s
}

// ref is the part of a job's dataRef that names s: for an image folder
// with how it is read, and, once s has read its data for jobs on workers
// (ForRunner), the keyed digest of that data's content.
func (s Source) ref() dataRef {
	return dataRef{Dataset: s.Name, Dir: s.Dir, NominalN: s.NominalN, Subset: s.Subset, Folder: s.read, Digest: s.check.digest()}
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

// loadCtx reads s, warning when the training set's count differs from the
// nominal size (the count itself goes only to the curator's warn). For a
// network with a fixed front end it returns the features of both sets
// (from s.Features' cache, or computed), which the network reads as its
// input; it stops with ctx's error while they are computed.
func (s Source) loadCtx(ctx context.Context, warn func(string)) (train, test *data.Dataset, err error) {
	_, train, test, err = s.loadRawCtx(ctx, warn)
	return train, test, err
}

// loadRawCtx is loadCtx that also returns the training set's images as
// read, before the front end (train itself for a network without one).
func (s Source) loadRawCtx(ctx context.Context, warn func(string)) (raw, train, test *data.Dataset, err error) {
	if s.loadContext != nil {
		train, test, err = s.loadContext(ctx, warn)
	} else {
		train, test, err = s.Load()
	}
	if err != nil {
		return nil, nil, nil, err
	}
	raw = train
	if train, err = s.inputs(ctx, "train", train, warn); err != nil {
		return nil, nil, nil, err
	}
	if test, err = s.inputs(ctx, "test", test, warn); err != nil {
		return nil, nil, nil, err
	}
	// A subset's count is binomial around its nominal size by design.
	if train.N != s.NominalN && s.Subset == nil && warn != nil {
		where := s.Dir
		if where == "" {
			where = s.Name
		}
		warn(fmt.Sprintf("%s holds %d training examples, not the nominal %d; sampling rates and divisors use the nominal size (curator-side note)", where, train.N, s.NominalN))
	}
	return raw, train, test, nil
}

// LoadInputs reads s's training and test sets as its network reads them:
// the images, or, for a network with a fixed front end (a scatter first
// layer), their features, from s.Features' cache or computed (a set of
// images whose features are cached is hashed, not transformed, so the
// cache is read, never recomputed, for data it holds). It warns through
// warn, if not nil, when the training set's count differs from the
// nominal size, and stops with ctx's error while features are computed.
func (s Source) LoadInputs(ctx context.Context, warn func(string)) (train, test *data.Dataset, err error) {
	return s.loadCtx(ctx, warn)
}

// inputs is the set d (called set in progress reports) as s's network
// reads it: d itself, or, for a network with a fixed front end, its
// features (from s.Features' cache, or computed).
func (s Source) inputs(ctx context.Context, set string, d *data.Dataset, warn func(string)) (*data.Dataset, error) {
	f, ok := s.Arch.FrontEnd()
	if !ok {
		return d, nil
	}
	var progress func(int, int)
	if p := s.Features.Progress; p != nil {
		progress = func(done, total int) { p(set, done, total) }
	}
	if s.Features.Dir == "" {
		return features.Compute(ctx, f, d, progress)
	}
	feat, _, err := features.Load(ctx, s.Features.Dir, f, d, progress, warn)
	return feat, err
}

// inputRef is the dataRef of the sets s's network reads: s.ref(), with
// the network's fixed front end, if it has one, so that a job computes
// the same features wherever it runs.
func (s Source) inputRef() dataRef {
	r := s.ref()
	if f, ok := s.Arch.FrontEnd(); ok {
		r.FrontEnd = &f.Spec
	}
	return r
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
