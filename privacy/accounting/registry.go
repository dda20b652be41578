package accounting

import (
	"fmt"

	"github.com/dptune/dptune/internal/registry"
)

// Named is an accountant people choose by name (`--accountant`): each
// accountant's own file registers it with Register.
type Named struct {
	// Name is the accountant's short name, as its Name method returns it.
	Name string
	// New returns the accountant; nil for a name that labels an
	// approximation counted by its own path (the xiang reductions of
	// random-stop tuning), which Lookup finds but New cannot make.
	New func() Accountant
	// Approximation, when not empty, says why ε is not a proved upper
	// bound (e.g. "a central-limit approximation"): such an accountant is
	// for reporting only, never for calibrating a run.
	Approximation string
	// Help describes it in a flag's help, after its name (e.g.
	// "tightest"); empty for none.
	Help string
	// Describe names it for people beside an ε, given the RDP order
	// (zero when there is none); nil means "NAME accountant".
	Describe func(order float64) string
	// Rank orders the names in lists (help texts, errors): lower first.
	Rank int
}

var named = registry.New[Named]("accounting: accountant")

// Register makes n known by its name. Accountants register themselves in
// init; registering a name twice, or an empty name, panics (a programming
// error, like http.Handle's).
func Register(n Named) { named.Register(n.Name, n.Rank, n) }

// Lookup returns the accountant registered as name.
func Lookup(name string) (Named, bool) { return named.Lookup(name) }

// Names lists the registered accountants that New can make, by rank: those
// with a proved upper bound only, or also the approximations when
// approximate is true.
func Names(approximate bool) []string {
	return named.Names(func(n Named) bool { return n.New != nil && (approximate || n.Approximation == "") })
}

// AllNames lists every registered name by rank, the approximations New
// cannot make (the xiang reductions) included: every name a report may
// give an ε under.
func AllNames() []string { return named.Names(nil) }

// ByName returns the accountant called name ("" means "rdp"). Only when
// approximate is true may it be an approximation (for reporting, never for
// calibrating a run). An unknown name, or an approximation when
// approximate is false, is an error saying which names are accepted.
func ByName(name string, approximate bool) (Accountant, error) {
	if name == "" {
		name = "rdp"
	}
	n, ok := Lookup(name)
	switch {
	case !ok || n.New == nil:
		return nil, fmt.Errorf("unknown accountant %q (want %s)", name, registry.Either(Names(approximate)))
	case n.Approximation != "" && !approximate:
		return nil, fmt.Errorf("the %s accountant is %s, not an upper bound on ε; use %s here", name, n.Approximation, registry.Either(Names(false)))
	}
	return n.New(), nil
}

// Describe names the accountant called name for people, with the RDP
// order where there is one (e.g. "rdp accountant, order 12").
func Describe(name string, order float64) string {
	if n, ok := Lookup(name); ok && n.Describe != nil {
		return n.Describe(order)
	}
	return name + " accountant"
}

// Help lists the registered accountants for a flag's help, by rank, each
// with its help text: "rdp, pld (tightest, slower) or gdp (…)". approximate says
// whether approximations are listed.
func Help(approximate bool) string {
	names := Names(approximate)
	for i, name := range names {
		if n, _ := Lookup(name); n.Help != "" {
			names[i] += " (" + n.Help + ")"
		}
	}
	return registry.Either(names)
}
