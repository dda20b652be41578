package job

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
)

// smallMNIST is a Source of n random 28×28 training examples and 20 test
// examples.
func smallMNIST(n int) Source { return randomImages(n, 20) }

// randomImages is a Source of random 28×28 images with random labels: n
// to train on and nTest in the test set.
func randomImages(n, nTest int) Source {
	mk := func(n int, rng *rand.Rand) *data.Dataset {
		d := &data.Dataset{Name: "small", N: n, C: 1, H: 28, W: 28, Classes: 10, X: make([]float32, n*784), Y: make([]uint8, n)}
		for i := range d.X {
			d.X[i] = float32(rng.NormFloat64())
		}
		for i := range d.Y {
			d.Y[i] = uint8(rng.IntN(10))
		}
		return d
	}
	return Source{Name: "mnist", Arch: model.MNIST, NominalN: n, Load: func() (*data.Dataset, *data.Dataset, error) {
		rng := rand.New(rand.NewPCG(3, 4))
		return mk(n, rng), mk(nTest, rng), nil
	}}
}

// A training run interrupted after 3 of its 12 steps releases the ε and
// ledger it is charged in the budget file: the full planned run's, with a
// note, not the 3 steps'.
func TestInterruptedTrainReleasesWhatIsCharged(t *testing.T) {
	file := filepath.Join(t.TempDir(), "b.budget")
	if err := budget.Init(file, 50, 1e-5, "mnist"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := TrainSpec{Data: smallMNIST(60), Delta: 1e-5, NoiseMultiplier: 1, ClipNorm: 1, BatchSize: 10, Epochs: 2, LearningRate: 0.1, Budget: file,
		Progress: func(p TrainProgress) {
			if p.Step == 3 {
				cancel()
			}
		}}
	rel, _, err := Train(ctx, s)
	if !errors.Is(err, context.Canceled) || rel == nil {
		t.Fatalf("Train: %v", err)
	}
	rep := rel.Report.(*TrainReport)
	q := 10.0 / 60
	planned := accounting.DPSGD(1, q, 12)
	g, err := accounting.RDP{}.Epsilon(planned, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || rep.Steps >= rep.PlannedSteps || rep.PlannedSteps != 12 {
		t.Fatalf("steps %d of %d, interrupted %v", rep.Steps, rep.PlannedSteps, rep.Interrupted)
	}
	if rep.Epsilon == nil || *rep.Epsilon != g.Epsilon || rel.Epsilon == nil || *rel.Epsilon != g.Epsilon {
		t.Fatalf("released ε %v, want the planned run's %v", rep.Epsilon, g.Epsilon)
	}
	if !strings.Contains(rep.EpsilonNote, "planned") {
		t.Errorf("no note on the ε of an interrupted run: %q", rep.EpsilonNote)
	}
	b, err := budget.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	charged := b.Releases[len(b.Releases)-1]
	released, err := accounting.RDP{Orders: b.Orders}.RDP(rel.Ledger.Event())
	if err != nil {
		t.Fatal(err)
	}
	if charged.Status != budget.Done || !reflect.DeepEqual(charged.RDP, released) || !reflect.DeepEqual(rep.Ledger, rel.Ledger) {
		t.Errorf("charged %v, released ledger's RDP %v", charged.RDP, released)
	}
}

// A training run that diverges releases only its ledger, with that
// ledger's ε (not null).
func TestFailedTrainStatesItsEpsilon(t *testing.T) {
	s := TrainSpec{Data: smallMNIST(60), Delta: 1e-5, NoiseMultiplier: 1, ClipNorm: 1, BatchSize: 10, Epochs: 2, LearningRate: 1e300}
	rel, _, err := Train(context.Background(), s)
	if err == nil || rel == nil || !rel.Failed {
		t.Fatalf("lr 1e300: %v", err)
	}
	rep := rel.Report.(*TrainReport)
	if rep.Failed != failedTraining {
		t.Errorf("released failure %q, want the fixed %q (the error is %q)", rep.Failed, failedTraining, err)
	}
	g, err := accounting.RDP{}.Epsilon(accounting.DPSGD(1, 10.0/60, rep.Steps), 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Epsilon == nil || *rep.Epsilon != g.Epsilon || rep.Steps < 1 || rep.Steps >= 12 {
		t.Fatalf("failed after %d steps: ε %v, want %v; note %q", rep.Steps, rep.Epsilon, g.Epsilon, rep.EpsilonNote)
	}
}

// After Save, dir holds one release: a failed job moves an earlier
// release to dir/previous, a later good one removes failed-report.json.
func TestSaveLeavesOneRelease(t *testing.T) {
	dir := t.TempDir()
	exists := func(name string) bool { _, err := os.Stat(filepath.Join(dir, name)); return err == nil }
	net, err := model.New(model.MNIST, randsrc.Seeded(1, "init"))
	if err != nil {
		t.Fatal(err)
	}
	good := &Release{Model: net, hyper: map[string]any{"steps": 1}, Report: map[string]int{"run": 1}}
	failed := &Release{Failed: true, Report: map[string]int{"run": 2}}
	if err := good.Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := failed.Save(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"model.json", "params.bin", "report.json"} {
		if exists(name) || !exists(filepath.Join("previous", name)) {
			t.Errorf("after a failed run, %s is still beside failed-report.json or not in previous/", name)
		}
	}
	if _, _, err := model.Load(filepath.Join(dir, "previous")); err != nil {
		t.Errorf("the earlier model cannot be loaded from previous/: %v", err)
	}
	if !exists("failed-report.json") {
		t.Fatal("no failed-report.json")
	}
	if err := good.Save(dir); err != nil {
		t.Fatal(err)
	}
	if exists("failed-report.json") || !exists("report.json") || !exists("model.json") {
		t.Error("after a good run, the stale failed-report.json is kept or the release is missing")
	}
}
