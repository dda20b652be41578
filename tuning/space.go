package tuning

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/tuning/space"
)

// The search-space vocabulary lives in package space, which package
// federated shares; these names stay so that tuning's callers read
// tuning.Space as before.
type (
	// Space is space.Space: the grid of candidates.
	Space = space.Space
	// Dim is space.Dim: one named dimension of a Space.
	Dim = space.Dim
	// Candidate is space.Candidate: one point of a Space.
	Candidate = space.Candidate
)

// MaxCandidates is space.MaxCandidates, the most candidates a space may
// have.
const MaxCandidates = space.MaxCandidates

// Categorical returns the dimension called name with the given choices
// (space.Categorical).
func Categorical(name string, choices ...string) Dim { return space.Categorical(name, choices...) }

// LogGrid returns n values from lo, each factor times the previous
// (space.LogGrid).
func LogGrid(lo, factor float64, n int) []float64 { return space.LogGrid(lo, factor, n) }

// LinearGrid returns n values from lo in steps of step, rounded to 12
// significant digits (space.LinearGrid).
func LinearGrid(lo, step float64, n int) []float64 { return space.LinearGrid(lo, step, n) }

// ParseSpace parses the JSON text b of a search space (space.ParseSpace,
// which lists its errors); name labels the errors and names a space whose
// JSON gives none.
func ParseSpace(name string, b []byte) (Space, error) { return space.ParseSpace(name, b) }

// The dimension names the default Trainer understands.
const (
	LearningRate = "learning_rate"
	ClipNorm     = "clip_norm"
)

// BuiltinSpace returns the built-in space called name: the ones below, and
// any a tuner registers from its own file (RegisterSpace):
//
//   - "mnist-dphypo": DP-HyPO Setting E.1 — learning rate 1e-4 … 10, 16
//     values log-spaced by 10^{1/3}; clipping norm 0.3 … 6.0 in steps of 0.3
//     (20 values); 320 candidates.
//   - "cifar10-dphypo": DP-HyPO Setting E.2 — learning rate from 1e-4, 50
//     values log-spaced by 10^{0.1}; clipping norm 2 … 100 in steps of 2 (50
//     values; the paper's range [0, 100] would include a clipping norm of 0);
//     2,500 candidates.
func BuiltinSpace(name string) (Space, bool) {
	spacesMu.RLock()
	defer spacesMu.RUnlock()
	for _, s := range spaces {
		if s.name == name {
			return s.build(), true
		}
	}
	return Space{}, false
}

// namedSpace is a built-in space: its name and how to build it.
type namedSpace struct {
	name  string
	build func() Space
}

var (
	spacesMu sync.RWMutex
	// spaces are the built-in spaces in registration order: these two,
	// then those registered from init functions.
	spaces = []namedSpace{
		{"mnist-dphypo", func() Space {
			return Space{Name: "mnist-dphypo", Dims: []Dim{
				{Name: LearningRate, Values: LogGrid(1e-4, math.Cbrt(10), 16), Log: true},
				{Name: ClipNorm, Values: LinearGrid(0.3, 0.3, 20)},
			}}
		}},
		{"cifar10-dphypo", func() Space {
			return Space{Name: "cifar10-dphypo", Dims: []Dim{
				{Name: LearningRate, Values: LogGrid(1e-4, math.Pow(10, 0.1), 50), Log: true},
				{Name: ClipNorm, Values: LinearGrid(2, 2, 50)},
			}}
		}},
	}
)

// RegisterSpace adds a built-in space called name, built by build (whose
// Name must be name); it panics on a duplicate or empty name (a programming
// error: each space registers once, from its file's init).
func RegisterSpace(name string, build func() Space) {
	spacesMu.Lock()
	defer spacesMu.Unlock()
	if name == "" {
		panic("tuning: a search space without a name")
	}
	for _, s := range spaces {
		if s.name == name {
			panic("tuning: search space " + name + " registered twice")
		}
	}
	spaces = append(spaces, namedSpace{name, build})
}

// SpaceNames returns the built-in spaces' names in registration order.
func SpaceNames() []string {
	spacesMu.RLock()
	defer spacesMu.RUnlock()
	names := make([]string, len(spaces))
	for i, s := range spaces {
		names[i] = s.name
	}
	return names
}

// SpacesList is the built-in spaces' names and "a .json file" as English
// ("a, b or a .json file"): for help text and errors.
func SpacesList() string {
	return strings.Join(SpaceNames(), ", ") + " or a .json file"
}

// maxSpaceBytes bounds a search-space file LoadSpace reads: a grid of
// MaxCandidates values written out one by one takes about 20 MB.
const maxSpaceBytes = 64 << 20

// LoadSpace returns the builtin space called nameOrFile, or reads a JSON
// file ending in ".json" and parses it with ParseSpace. The error for a name
// that is neither lists the builtins.
func LoadSpace(nameOrFile string) (Space, error) {
	if s, ok := BuiltinSpace(nameOrFile); ok {
		return s, nil
	}
	if !strings.HasSuffix(nameOrFile, ".json") {
		return Space{}, fmt.Errorf("unknown search space %q (want %s)", nameOrFile, SpacesList())
	}
	b, err := fsx.ReadFile(nameOrFile, maxSpaceBytes)
	if err != nil {
		return Space{}, err
	}
	return ParseSpace(nameOrFile, b)
}
