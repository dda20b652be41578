package job

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
)

// A cancelled job stays charged at its worst case (when to stop may have
// followed the non-private training loss); a finished one is charged what
// it spent; a seeded job is refused.
func TestChargeOfCancelledAndFinishedJobs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "b.budget")
	if err := budget.Init(file, 5, 1e-5, "mnist"); err != nil {
		t.Fatal(err)
	}
	worst := ledgerOf("planned", accounting.DPSGD(2, 0.01, 100))
	taken := ledgerOf("taken", accounting.DPSGD(2, 0.01, 3))
	for _, c := range []struct {
		err  error
		want accounting.Ledger
	}{{context.Canceled, worst}, {nil, taken}} {
		ch, err := reserve(file, false, "mnist", "train", "test run", worst)
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.done(taken, c.err); !errors.Is(err, c.err) {
			t.Fatal(err)
		}
		b, err := budget.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := accounting.RDP{Orders: b.Orders}.RDP(c.want.Event())
		if r := b.Releases[len(b.Releases)-1]; r.Status != budget.Done || !reflect.DeepEqual(r.RDP, want) {
			t.Errorf("after %v: recorded %+v, want %v", c.err, r, c.want)
		}
	}
	if _, err := reserve(file, true, "mnist", "train", "seeded", worst); !errors.Is(err, ErrInvalid) {
		t.Errorf("seeded job under a budget: %v", err)
	}
}
