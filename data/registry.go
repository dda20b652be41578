package data

import "github.com/dptune/dptune/internal/registry"

// Named is a dataset people choose by name (`--dataset`): each dataset's
// file registers it with Register, with everything a job needs before
// reading it. Every field is public knowledge, never a property of the
// private copy read later.
type Named struct {
	// Name is the dataset's short name, e.g. "mnist"; it names the
	// dataset in budget files and reports.
	Name string
	// NominalN is the published size of the training set: the public n
	// every sampling rate and divisor uses (the count of the private copy
	// is never used).
	NominalN int
	// TestN is the published size of the test set (public, like the
	// test set itself).
	TestN int
	// C, H, W are an example's shape; Classes the number of labels.
	C, H, W, Classes int
	// ClassNames name the labels (label i is ClassNames[i]).
	ClassNames []string
	// Mean and Std are the published per-channel constants the loader
	// normalises the pixels scaled to [0, 1] with.
	Mean, Std []float64
	// Model is the default network: the name of a built-in model spec.
	Model string
	// Space is the default search space: the name of a built-in space.
	Space string
	// Load reads the training and test sets from dir.
	Load func(dir string) (train, test *Dataset, err error)
	// DefaultDir finds the files when no directory is named; nil when a
	// directory is required.
	DefaultDir func() (string, error)
	// DefaultDirHelp says where DefaultDir looks, for a flag's help.
	DefaultDirHelp string
	// DirHelp says what the required directory holds, for an error.
	DirHelp string
	// Rank orders the names in lists (help texts, errors): lower first.
	Rank int
}

var named = registry.New[Named]("data: dataset")

// Register makes n known by its name. Datasets register themselves in
// init; registering a name twice, an empty name or no loader panics (a
// programming error, like http.Handle's).
func Register(n Named) {
	if n.Load == nil {
		panic("data: dataset " + n.Name + " registered without a loader")
	}
	named.Register(n.Name, n.Rank, n)
}

// Lookup returns the dataset registered as name.
func Lookup(name string) (Named, bool) { return named.Lookup(name) }

// Names lists the registered datasets by rank.
func Names() []string { return named.Names(nil) }

// NamesList lists the registered datasets as English, for a flag's help
// and errors: "mnist, cifar10 or fashion-mnist".
func NamesList() string { return registry.Either(Names()) }
