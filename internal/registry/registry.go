// Package registry holds values known by name — accountants, datasets —
// that the packages defining them register in init, each from its own
// file, and lists them in a fixed order for help texts and errors.
package registry

import (
	"sort"
	"strings"
	"sync"
)

// Registry maps names to values of type T. The zero value is not usable:
// make one with New.
type Registry[T any] struct {
	what string
	mu   sync.RWMutex
	m    map[string]entry[T]
}

type entry[T any] struct {
	v    T
	rank int
}

// New returns an empty registry of what (e.g. "accountant", for the panic
// of a programming error).
func New[T any](what string) *Registry[T] {
	return &Registry[T]{what: what, m: map[string]entry[T]{}}
}

// Register makes v known as name, listed by rank (lower first, then by
// name). Registering a name twice, or an empty name, panics: it is a
// programming error, like http.Handle's.
func (r *Registry[T]) Register(name string, rank int, v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup || name == "" {
		panic(r.what + " " + name + " registered twice or unnamed")
	}
	r.m[name] = entry[T]{v, rank}
}

// Lookup returns the value registered as name.
func (r *Registry[T]) Lookup(name string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.m[name]
	return e.v, ok
}

// Names lists the names whose values keep accepts (all, for a nil keep),
// by rank, then by name.
func (r *Registry[T]) Names(keep func(T) bool) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	type ranked struct {
		name string
		rank int
	}
	var ns []ranked
	for name, e := range r.m {
		if keep == nil || keep(e.v) {
			ns = append(ns, ranked{name, e.rank})
		}
	}
	sort.Slice(ns, func(i, j int) bool {
		if ns[i].rank != ns[j].rank {
			return ns[i].rank < ns[j].rank
		}
		return ns[i].name < ns[j].name
	})
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.name
	}
	return out
}

// Either joins names for people: "a", "a or b", "a, b or c".
func Either(names []string) string {
	if len(names) <= 1 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
