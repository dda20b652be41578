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

// LedgerVersion is the version of the ledger JSON MarshalJSON writes.
// Version 2 (this one): a Gaussian's "noise_multiplier" is σ/Δ and a Vote's
// noise is "noise_stddev". Version 1 (ledgers without a "version" field):
// a Gaussian's "noise_multiplier" was the noise standard deviation in the
// query's units. UnmarshalJSON reads both; a ledger and its rewritten form
// give the same ε.
const LedgerVersion = 2

type entryJSON struct {
	Label string          `json:"label"`
	Event json.RawMessage `json:"event"`
}

// MarshalJSON writes {"version": 2, "entries": [{"label": …, "event": {…}}, …]}.
func (l Ledger) MarshalJSON() ([]byte, error) {
	out := struct {
		Version int         `json:"version"`
		Entries []entryJSON `json:"entries"`
	}{Version: LedgerVersion, Entries: make([]entryJSON, len(l.Entries))}
	for i, e := range l.Entries {
		b, err := MarshalEvent(e.Event)
		if err != nil {
			return nil, err
		}
		out.Entries[i] = entryJSON{e.Label, b}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes, and ledgers of version 1
// (no "version" field), converting their events to today's meaning.
func (l *Ledger) UnmarshalJSON(b []byte) error {
	var in struct {
		Version *int        `json:"version"`
		Entries []entryJSON `json:"entries"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return fmt.Errorf("accounting: decoding ledger: %w", err)
	}
	version := 1
	if in.Version != nil {
		version = *in.Version
	}
	if version < 1 || version > LedgerVersion {
		return fmt.Errorf("accounting: ledger version %d: this dptune reads versions 1 to %d", version, LedgerVersion)
	}
	l.Entries = make([]Entry, len(in.Entries))
	for i, e := range in.Entries {
		ev, err := unmarshalEvent(e.Event, version)
		if err != nil {
			return fmt.Errorf("accounting: ledger entry %d (%s): %w", i, e.Label, err)
		}
		l.Entries[i] = Entry{e.Label, ev}
	}
	return nil
}
