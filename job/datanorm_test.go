package job

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
)

// dataNormMNIST is smallMNIST(n) for a network that standardises its input
// with a datanorm layer of noise multiplier sigma.
func dataNormMNIST(t *testing.T, n int, sigma float64) Source {
	t.Helper()
	src := smallMNIST(n)
	a, err := model.NewArch(model.Spec{Name: "dn-linear", Layers: []model.LayerSpec{model.DataNorm(sigma, 0, 0), model.Flatten(), model.Linear(10)}}, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	src.Arch = a
	return src
}

// A seeded run of a datanorm network releases a ledger of two entries, the
// normalisation's two Gaussian mechanisms and then the DP-SGD steps, and
// the ε of their composition; the report gives the normalisation's σ and
// its ε alone.
func TestTrainDataNormLedger(t *testing.T) {
	seed := uint64(3)
	s := TrainSpec{Data: dataNormMNIST(t, 60, 6), Delta: 1e-5, NoiseMultiplier: 1.5, ClipNorm: 1, BatchSize: 10, Epochs: 1, LearningRate: 0.1, Seed: &seed}
	rel, _, err := Train(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*TrainReport)
	g := accounting.Gaussian{NoiseMultiplier: 6, Sensitivity: 1}
	steps := accounting.DPSGD(1.5, 10.0/60, 6)
	es := rep.Ledger.Entries
	if len(es) != 2 || !strings.Contains(es[0].Label, "data normalisation") || !eventEqual(es[0].Event, accounting.Composed{Events: []accounting.Event{g, g}}) || !eventEqual(es[1].Event, steps) {
		t.Fatalf("ledger %+v", es)
	}
	whole, err := accounting.RDP{}.Epsilon(accounting.Composed{Events: []accounting.Event{g, g, steps}}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Epsilon == nil || abs(*rep.Epsilon-whole.Epsilon) > 1e-9*whole.Epsilon {
		t.Fatalf("ε %v, want the composition's %v", rep.Epsilon, whole.Epsilon)
	}
	alone, _ := accounting.RDP{}.Epsilon(accounting.Composed{Events: []accounting.Event{g, g}}, 1e-5)
	if rep.NormNoiseMultiplier != 6 || rep.NormEpsilon == nil || *rep.NormEpsilon != alone.Epsilon || !(alone.Epsilon < whole.Epsilon) {
		t.Fatalf("normalisation σ %v, ε %v; want 6, %v", rep.NormNoiseMultiplier, rep.NormEpsilon, alone.Epsilon)
	}
	net := rel.Model
	if v := net.Buffer("dn1.var"); len(v) != 1 || v[0] == 1 {
		t.Fatalf("the model's buffers were not estimated: %v", net.Buffers)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

func eventEqual(a, b accounting.Event) bool {
	x, err1 := accounting.MarshalEvent(a)
	y, err2 := accounting.MarshalEvent(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// Calibrating for ε counts the normalisation: the whole run meets ε, with
// a larger DP-SGD noise multiplier than the same run without it.
func TestTrainDataNormCalibration(t *testing.T) {
	sigmaOf := func(src Source) (float64, *TrainReport) {
		var cfg dpsgd.Config
		s := TrainSpec{Data: src, Epsilon: 2, Delta: 1e-5, ClipNorm: 1, BatchSize: 10, Epochs: 1, LearningRate: 0.1,
			Started: func(c dpsgd.Config) { cfg = c }}
		rel, _, err := Train(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.NoiseMultiplier, rel.Report.(*TrainReport)
	}
	with, rep := sigmaOf(dataNormMNIST(t, 60, 4))
	without, _ := sigmaOf(smallMNIST(60))
	if rep.Epsilon == nil || *rep.Epsilon > 2 || *rep.Epsilon < 1.9 || !(with > without) || rep.NoiseMultiplier != with {
		t.Fatalf("ε %v with σ %v (σ %v without normalisation)", deref(rep.Epsilon), with, without)
	}
}

// A normalisation that alone spends the target ε is refused before the
// data is read.
func TestTrainDataNormOverBudget(t *testing.T) {
	src := dataNormMNIST(t, 60, 0.5)
	src.Load = func() (*data.Dataset, *data.Dataset, error) {
		t.Fatal("the data was read")
		return nil, nil, nil
	}
	s := TrainSpec{Data: src, Epsilon: 3, Delta: 1e-5, ClipNorm: 1, BatchSize: 10, Epochs: 1, LearningRate: 0.1}
	_, _, err := Train(context.Background(), s)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "noise_multiplier") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("σ_norm 0.5 at ε = 3: %v", err)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// The budget file is charged what a datanorm run releases, its
// normalisation and its steps, and its reservation counts the
// normalisation: a cap that only the steps fit under refuses the run
// before its data is read.
func TestTrainDataNormBudget(t *testing.T) {
	g := accounting.Gaussian{NoiseMultiplier: 6, Sensitivity: 1}
	steps := accounting.DPSGD(1.5, 10.0/60, 6)
	// The filter's ε of each, as the budget file computes it.
	filter := func(e accounting.Event) float64 {
		curve, err := accounting.RDP{Orders: budget.DefaultOrders}.RDP(e)
		if err != nil {
			t.Fatal(err)
		}
		eps, _ := budget.FilterEpsilon(budget.DefaultOrders, curve, 1e-5)
		return eps
	}
	whole, alone := filter(accounting.Composed{Events: []accounting.Event{g, g, steps}}), filter(steps)
	for _, c := range []struct {
		cap    float64
		refuse bool
	}{{(whole + alone) / 2, true}, {whole + 1, false}} {
		file := filepath.Join(t.TempDir(), "b.budget")
		if err := budget.Init(file, c.cap, 1e-5, "mnist"); err != nil {
			t.Fatal(err)
		}
		src := dataNormMNIST(t, 60, 6)
		load := src.Load
		read := false
		src.Load = func() (*data.Dataset, *data.Dataset, error) { read = true; return load() }
		s := TrainSpec{Data: src, Delta: 1e-5, NoiseMultiplier: 1.5, ClipNorm: 1, BatchSize: 10, Epochs: 1, LearningRate: 0.1, Budget: file}
		rel, _, err := Train(context.Background(), s)
		if c.refuse {
			if !errors.Is(err, ErrInvalid) || read {
				t.Fatalf("cap %v below the run's %v: %v (data read: %v)", c.cap, whole, err, read)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := budget.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		want, err := accounting.RDP{Orders: b.Orders}.RDP(accounting.Composed{Events: []accounting.Event{g, g, steps}})
		if err != nil {
			t.Fatal(err)
		}
		if charged := b.Releases[len(b.Releases)-1]; len(rel.Ledger.Entries) != 2 || !reflect.DeepEqual(charged.RDP, want) {
			t.Fatalf("charged %v, want %v", charged.RDP, want)
		}
	}
}

// The vote tuner refuses a datanorm network: its clients would estimate
// statistics on their own data, which the vote's analysis does not count.
func TestVoteRefusesDataNorm(t *testing.T) {
	_, err := PlanVote(context.Background(), VoteSpec{Data: dataNormMNIST(t, 60, 6)})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "datanorm") {
		t.Fatalf("PlanVote: %v", err)
	}
}
