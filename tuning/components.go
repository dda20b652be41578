package tuning

import (
	"math"

	"github.com/dptune/dptune/privacy/accounting"
)

// The names of a tuning's ε components (EpsilonComponent).
const (
	// ComponentSelection is the tuning's selection: every run or part run
	// and every private score or search step that chose the candidate.
	// When the released model is the selected run's (a tuning without a
	// final run), it is the whole tuning.
	ComponentSelection = "selection"
	// ComponentFinal is the final DP-SGD run of the selected candidate on
	// the whole training set, with its data normalisation if any.
	ComponentFinal = "final run"
	// ComponentDataNorm is a private data normalisation (a network with a
	// datanorm layer): the tuning's one estimate released to every run
	// (SharedDataNorm), its own ledger entry beside the selection and the
	// final run; or, for a tuning that does not share one (doubling), the
	// final run's own, part of ComponentFinal's ε.
	ComponentDataNorm = "data normalisation"
)

// EpsilonComponent is one part of a tuning's ledger and its ε alone at the
// tuning's δ. The components' ε do not add up to the total: the total is
// the RDP composition of the parts, converted to (ε, δ) once, which is less
// than the sum of each part converted at the same δ.
type EpsilonComponent struct {
	Name string `json:"name"`
	// Epsilon is the component's ε alone at the tuning's δ (nats); nil
	// when the accountant cannot bound it.
	Epsilon *float64 `json:"epsilon"`
	// Note says what the component holds, where that is not plain.
	Note string `json:"note,omitempty"`
}

// EpsilonComponents splits ledger l into its components, each with its ε
// alone at delta under acc: its first selection entries are the selection;
// without a final run (final false) that is all, and the selection is the
// whole tuning; else the rest of l is the final run (none when nothing was
// selected), and norm, if not nil, the final run's data normalisation.
func EpsilonComponents(l accounting.Ledger, selection int, final bool, norm accounting.Event, acc accounting.Accountant, delta float64) []EpsilonComponent {
	return epsilonComponents(l, false, selection, final, norm, acc, delta)
}

// SharedEpsilonComponents is EpsilonComponents of the ledger l of a
// tuning that estimated its one data normalisation before its runs
// (SharedDataNorm): l's first entry is that estimate, the
// ComponentDataNorm component (listed first), and the rest of l is split
// as EpsilonComponents splits a ledger, without a final run's own
// normalisation.
func SharedEpsilonComponents(l accounting.Ledger, selection int, final bool, acc accounting.Accountant, delta float64) []EpsilonComponent {
	return epsilonComponents(l, true, selection, final, nil, acc, delta)
}

func epsilonComponents(l accounting.Ledger, shared bool, selection int, final bool, norm accounting.Event, acc accounting.Accountant, delta float64) []EpsilonComponent {
	var out []EpsilonComponent
	if shared {
		if len(l.Entries) == 0 {
			return nil
		}
		out = append(out, EpsilonComponent{Name: ComponentDataNorm, Epsilon: epsilonAlone(l.Entries[0].Event, acc, delta),
			Note: "estimated once before the tuning's runs and released to every run (candidates and final run) as a public input: counted once"})
		l = accounting.Ledger{Entries: l.Entries[1:]}
	}
	if len(l.Entries) == 0 || selection < 1 {
		return out
	}
	eps := func(es []accounting.Event) *float64 {
		var e accounting.Event = accounting.Composed{Events: es}
		if len(es) == 1 {
			e = es[0]
		}
		return epsilonAlone(e, acc, delta)
	}
	events := func(from, to int) []accounting.Event {
		var es []accounting.Event
		for _, e := range l.Entries[from:to] {
			es = append(es, e.Event)
		}
		return es
	}
	selection = min(selection, len(l.Entries))
	sel := EpsilonComponent{Name: ComponentSelection, Epsilon: eps(events(0, selection))}
	if !final {
		sel.Note = "the released model is the selected run's: the selection is the whole tuning"
		if shared {
			sel.Note = "the released model is the selected run's: the selection is the whole tuning beside the data normalisation"
		}
		return append(out, sel)
	}
	sel.Note = "only the selected hyperparameters (and its released score, if any) leave it"
	out = append(out, sel)
	if selection == len(l.Entries) {
		return out // nothing was selected: no final run
	}
	out = append(out, EpsilonComponent{Name: ComponentFinal, Epsilon: eps(events(selection, len(l.Entries))),
		Note: "the released model's run, on the whole training set"})
	if norm != nil {
		out = append(out, EpsilonComponent{Name: ComponentDataNorm, Epsilon: eps([]accounting.Event{norm}),
			Note: "the final run's own estimate, inside the final run's ε (the selection shares no estimate with it)"})
	}
	return out
}

// epsilonAlone is e's ε alone at delta under acc, nil when unbounded.
func epsilonAlone(e accounting.Event, acc accounting.Accountant, delta float64) *float64 {
	g, err := acc.Epsilon(e, delta)
	if err != nil || math.IsInf(g.Epsilon, 0) || math.IsNaN(g.Epsilon) {
		return nil
	}
	return &g.Epsilon
}
