package accounting_test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/dptune/dptune/privacy/accounting"
)

// compatFile is one testdata/ledgers file: ledgers as an earlier version
// of dptune wrote them, with the ε that version's accountants gave each.
type compatFile struct {
	WrittenBy string `json:"written_by"` // the commit that wrote them
	Ledgers   []struct {
		Name    string             `json:"name"`
		Delta   float64            `json:"delta"`
		Ledger  json.RawMessage    `json:"ledger"`
		Epsilon map[string]float64 `json:"epsilon"` // by accountant name
	} `json:"ledgers"`
}

// Ledgers written by earlier versions still decode to the same ε, by every
// accountant that counted them then, to 1e-12 relative; rewritten in
// today's format they decode to the same ε again, exactly. The files in
// testdata/ledgers were written at three commits (the last one writing
// version 1, the last one of dpsgd/accounting, and one whose tuners supply
// their own events) by the gen-COMMIT.go.txt program beside each, run as
// `go run ./internal/ledgergen` in a worktree of that commit. They are
// golden: never regenerated, only added to. A format change that cannot
// read them is a new LedgerVersion whose decoder converts them.
func TestLedgersOfEarlierVersions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "ledgers", "*.json"))
	if err != nil || len(files) < 3 {
		t.Fatalf("testdata/ledgers: %d files (%v)", len(files), err)
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var f compatFile
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if f.WrittenBy == "" || len(f.Ledgers) == 0 {
			t.Fatalf("%s: no commit or no ledgers", path)
		}
		for _, l := range f.Ledgers {
			var led accounting.Ledger
			if err := json.Unmarshal(l.Ledger, &led); err != nil {
				t.Errorf("%s %s: %v", f.WrittenBy, l.Name, err)
				continue
			}
			again, err := json.Marshal(led)
			if err != nil {
				t.Errorf("%s %s: rewriting: %v", f.WrittenBy, l.Name, err)
				continue
			}
			var rewritten accounting.Ledger
			if err := json.Unmarshal(again, &rewritten); err != nil {
				t.Errorf("%s %s: reading the rewritten ledger: %v", f.WrittenBy, l.Name, err)
				continue
			}
			if len(l.Epsilon) == 0 {
				t.Errorf("%s %s: no ε recorded", f.WrittenBy, l.Name)
			}
			for name, want := range l.Epsilon {
				var acc accounting.Accountant = accounting.Basic{} // pure-DP composition, not registered
				if name != "basic" {
					acc, err = accounting.ByName(name, true)
				}
				if err != nil {
					t.Errorf("%s %s: %v", f.WrittenBy, l.Name, err)
					continue
				}
				g, err := led.Spent(acc, l.Delta)
				if err != nil {
					t.Errorf("%s %s, %s: %v", f.WrittenBy, l.Name, name, err)
					continue
				}
				if math.Abs(g.Epsilon-want) > 1e-12*math.Abs(want) {
					t.Errorf("%s %s, %s: ε = %.17g, written as %.17g (relative %.2g)", f.WrittenBy, l.Name, name, g.Epsilon, want, math.Abs(g.Epsilon-want)/want)
				}
				if r, err := rewritten.Spent(acc, l.Delta); err != nil || r.Epsilon != g.Epsilon {
					t.Errorf("%s %s, %s: rewritten ε = %v (%v), read ε = %v", f.WrittenBy, l.Name, name, r.Epsilon, err, g.Epsilon)
				}
			}
		}
	}
}
