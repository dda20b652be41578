package job

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
	"github.com/dptune/dptune/runner"
)

// resumedRunner is a keyed runner resuming the invocation of key.
type resumedRunner struct {
	runner.Local
	key     [32]byte
	resumed bool
}

func (r resumedRunner) Key() [32]byte { return r.key }
func (r resumedRunner) Resumed() bool { return r.resumed }

// A resumed invocation takes over only the reservation made under its own
// key: not a stale reservation with the same command, label and worst case
// left by a killed local run into the same --out, nor another invocation's;
// its own, left by its first (killed) process, it takes over.
func TestReserveForAttachesOnlyItsOwnReservation(t *testing.T) {
	file := filepath.Join(t.TempDir(), "b.budget")
	if err := budget.Init(file, 50, 1e-5, "mnist"); err != nil {
		t.Fatal(err)
	}
	worst := ledgerOf("planned", accounting.DPSGD(2, 0.01, 100))
	const label = "dptune tune --tuner randomstop → out/tune"
	stale, err := reserveFor(runner.Local{}, file, false, "mnist", "tune", label, worst)
	if err != nil {
		t.Fatal(err)
	}
	var k1, k2 [32]byte
	k1[0], k2[0] = 1, 2
	first, err := reserveFor(resumedRunner{key: k1}, file, false, "mnist", "tune", label, worst)
	if err != nil {
		t.Fatal(err)
	}
	if first.r.ID() == stale.r.ID() {
		t.Fatal("a fresh invocation took a local run's reservation")
	}
	for _, c := range []struct {
		name string
		key  [32]byte
		want string // the reservation it must take over; "" for a new one
	}{{"another invocation", k2, ""}, {"its own", k1, first.r.ID()}} {
		got, err := reserveFor(resumedRunner{key: c.key, resumed: true}, file, false, "mnist", "tune", label, worst)
		if err != nil {
			t.Fatal(err)
		}
		switch id := got.r.ID(); {
		case c.want == "" && (id == stale.r.ID() || id == first.r.ID()):
			t.Errorf("%s took over reservation %s (stale local %s, first %s)", c.name, id, stale.r.ID(), first.r.ID())
		case c.want != "" && id != c.want:
			t.Errorf("%s got reservation %s, want its own %s", c.name, id, c.want)
		}
	}
	b, err := budget.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(b.Releases); n != 3 {
		t.Errorf("%d reservations, want 3 (the local run's, k1's, k2's)", n)
	}
}

// A run whose spending the budget file cannot record releases nothing: here
// the budget file is replaced while the run trains, so its reservation is
// gone when it commits (as when another process committed it first).
// Train returns no release, and the error says so.
func TestUncommittedTrainReleasesNothing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "b.budget")
	if err := budget.Init(file, 50, 1e-5, "mnist"); err != nil {
		t.Fatal(err)
	}
	s := TrainSpec{Data: smallMNIST(60), Delta: 1e-5, NoiseMultiplier: 1, ClipNorm: 1, BatchSize: 10, Epochs: 1, LearningRate: 0.1, Budget: file,
		Progress: func(p TrainProgress) {
			if p.Step == 2 {
				if err := os.Remove(file); err != nil {
					t.Error(err)
				}
				if err := budget.Init(file, 50, 1e-5, "mnist"); err != nil {
					t.Error(err)
				}
			}
		}}
	rel, diag, err := Train(context.Background(), s)
	if !errors.Is(err, ErrUncommitted) || rel != nil || diag != nil {
		t.Fatalf("Train: release %v, diagnostics %v, error %v; want nothing released and ErrUncommitted", rel != nil, diag != nil, err)
	}
}
