package data

import (
	"sort"
	"sync"
)

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
	// C, H, W are an example's shape; Classes the number of labels.
	C, H, W, Classes int
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

var registry = struct {
	sync.RWMutex
	m map[string]Named
}{m: map[string]Named{}}

// Register makes n known by its name. Datasets register themselves in
// init; registering a name twice, an empty name or no loader panics (a
// programming error, like http.Handle's).
func Register(n Named) {
	registry.Lock()
	defer registry.Unlock()
	if _, dup := registry.m[n.Name]; dup || n.Name == "" || n.Load == nil {
		panic("data: dataset " + n.Name + " registered twice, unnamed or without a loader")
	}
	registry.m[n.Name] = n
}

// Lookup returns the dataset registered as name.
func Lookup(name string) (Named, bool) {
	registry.RLock()
	defer registry.RUnlock()
	n, ok := registry.m[name]
	return n, ok
}

// Names lists the registered datasets by rank.
func Names() []string {
	registry.RLock()
	defer registry.RUnlock()
	ns := make([]Named, 0, len(registry.m))
	for _, n := range registry.m {
		ns = append(ns, n)
	}
	sort.Slice(ns, func(i, j int) bool {
		if ns[i].Rank != ns[j].Rank {
			return ns[i].Rank < ns[j].Rank
		}
		return ns[i].Name < ns[j].Name
	})
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.Name
	}
	return out
}
