package accounting

import (
	"encoding/json"
	"fmt"
)

// Ledger collects the events of one pipeline — tuning runs, noisy scores,
// the final training run — in the order they happened. Its composition is
// the pipeline's privacy cost; every result dptune writes carries it.
type Ledger struct {
	Entries []Entry
}

// Entry is one event of a Ledger with a label saying what it was.
type Entry struct {
	Label string
	Event Event
}

// Add appends event e, labelled, to the ledger.
func (l *Ledger) Add(label string, e Event) { l.Entries = append(l.Entries, Entry{label, e}) }

// Event is the composition of every event in the ledger.
func (l *Ledger) Event() Event {
	c := Composed{Events: make([]Event, len(l.Entries))}
	for i, e := range l.Entries {
		c.Events[i] = e.Event
	}
	return c
}

// Spent is the ledger's total guarantee at delta under acc.
func (l *Ledger) Spent(acc Accountant, delta float64) (Guarantee, error) {
	return acc.Epsilon(l.Event(), delta)
}

type entryJSON struct {
	Label string          `json:"label"`
	Event json.RawMessage `json:"event"`
}

// MarshalJSON writes {"entries": [{"label": …, "event": {…}}, …]}.
func (l Ledger) MarshalJSON() ([]byte, error) {
	out := struct {
		Entries []entryJSON `json:"entries"`
	}{Entries: make([]entryJSON, len(l.Entries))}
	for i, e := range l.Entries {
		b, err := MarshalEvent(e.Event)
		if err != nil {
			return nil, err
		}
		out.Entries[i] = entryJSON{e.Label, b}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (l *Ledger) UnmarshalJSON(b []byte) error {
	var in struct {
		Entries []entryJSON `json:"entries"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("accounting: decoding ledger: %w", err)
	}
	l.Entries = make([]Entry, len(in.Entries))
	for i, e := range in.Entries {
		ev, err := UnmarshalEvent(e.Event)
		if err != nil {
			return fmt.Errorf("accounting: ledger entry %d (%s): %w", i, e.Label, err)
		}
		l.Entries[i] = Entry{e.Label, ev}
	}
	return nil
}
