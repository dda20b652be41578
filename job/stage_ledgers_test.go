package job

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

var updateStageLedgers = flag.Bool("update-stage-ledgers", false, "rewrite testdata/stage_ledgers.json")

// stageLedgersFile holds the planned events and ledgers of networks with
// and without a privacy-spending stage (a datanorm layer), as the tree
// wrote them before the stages became a capability of the layer's engine
// rule. Do NOT make changes to it: it changes only by
// -update-stage-ledgers, and only for a change that means to change a
// ledger.
const stageLedgersFile = "testdata/stage_ledgers.json"

// stageArchs are the built-in networks on their datasets' inputs, and two
// small datanorm networks.
func stageArchs(t *testing.T) []model.Arch {
	t.Helper()
	var out []model.Arch
	for _, s := range model.BuiltinSpecs() {
		a := model.MNIST
		if strings.Contains(s.Name, "cifar") {
			a = model.CIFAR10
		}
		a.Spec = s
		out = append(out, a)
	}
	return append(out, dnArch(t, "dn7", model.DataNorm(7, 0, 0)), dnArch(t, "dn5-clip", model.DataNorm(5, 0.5, 0.7)))
}

func dnArch(t *testing.T, name string, dn model.LayerSpec) model.Arch {
	t.Helper()
	a, err := model.NewArch(model.Spec{Name: name, Layers: []model.LayerSpec{dn, model.Flatten(), model.Linear(10)}}, 1, 28, 28, 10)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// stageConfigs are runs of every kind a caller plans: calibrated-size
// private runs, one with its nominal expected batch, and a non-private
// one.
var stageConfigs = map[string]dpsgd.Config{
	"private":          {NoiseMultiplier: 1.3, ClipNorm: 1, SamplingRate: 0.01, Steps: 500, LearningRate: 1},
	"private-expected": {NoiseMultiplier: 0.9, ClipNorm: 0.1, SamplingRate: 256.0 / 60000, ExpectedBatchSize: 256, Steps: 2345, LearningRate: 4},
	"non-private":      {SamplingRate: 0.01, Steps: 100, LearningRate: 1, NonPrivate: true},
}

// stagePlanned is a run's planned event as its callers count it.
func stagePlanned(a model.Arch, cfg dpsgd.Config) accounting.Event {
	return dpsgd.PlannedEvent(a, cfg)
}

// stagePlannedLedger is the training job's ledger of a planned run.
func stagePlannedLedger(label string, a model.Arch, cfg dpsgd.Config) accounting.Ledger {
	return plannedLedger(label, a, cfg)
}

// stageProcessLedger is the training job's ledger of the process of a
// run that started at step start.
func stageProcessLedger(label string, a model.Arch, cfg dpsgd.Config, start int) accounting.Ledger {
	return processLedger(label, a, cfg, start)
}

// stageCalibrate is an audit's σ for one run of a.
func stageCalibrate(a model.Arch, eps, delta, q float64, steps int) (float64, error) {
	return calibrateRun(context.Background(), eps, delta, q, steps, a)
}

func marshalEvent(t *testing.T, e accounting.Event) string {
	t.Helper()
	b, err := accounting.MarshalEvent(e)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func marshalJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// stageData is n noisy 28×28 images with a label-dependent column, and 50
// test images.
func stageData(n int) Source {
	gen := func(n int, rng *rand.Rand) *data.Dataset {
		d := &data.Dataset{Name: "tiny", N: n, C: 1, H: 28, W: 28, Classes: 10, X: make([]float32, n*784), Y: make([]uint8, n)}
		for i := range d.Y {
			d.Y[i] = uint8(rng.IntN(10))
			for k := 0; k < 784; k++ {
				d.X[i*784+k] = float32(rng.NormFloat64() * 0.3)
				if k%10 == int(d.Y[i]) {
					d.X[i*784+k]++
				}
			}
		}
		return d
	}
	return Source{Name: "tiny", Arch: model.MNIST, NominalN: n, Load: func() (*data.Dataset, *data.Dataset, error) {
		rng := rand.New(rand.NewPCG(1, 2))
		return gen(n, rng), gen(50, rng), nil
	}}
}

// writeSpec writes a's spec as a .json network file and returns its path.
func writeSpec(t *testing.T, dir string, a model.Arch) string {
	t.Helper()
	path := filepath.Join(dir, a.Name+".json")
	if err := os.WriteFile(path, []byte(marshalJSON(t, a.Spec)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDataNormLedgersUnchanged pins, byte for byte, what every caller
// counts for a network's privacy-spending stages: dpsgd.PlannedEvent of
// every built-in network under private and non-private runs, the training
// job's planned and per-process ledgers, the tuning's per-run event with
// and without its one shared estimate, and the ledgers (and ε components)
// that training and tuning jobs release.
func TestDataNormLedgersUnchanged(t *testing.T) {
	got := map[string]string{}
	archs := stageArchs(t)
	for _, a := range archs {
		for name, cfg := range stageConfigs {
			got["planned/"+a.Name+"/"+name] = marshalEvent(t, stagePlanned(a, cfg))
		}
		cfg := stageConfigs["private-expected"]
		got["ledger/planned/"+a.Name] = marshalJSON(t, stagePlannedLedger("dpsgd training", a, cfg))
		got["ledger/process0/"+a.Name] = marshalJSON(t, stageProcessLedger("an earlier process", a, cfg, 0))
		got["ledger/process5/"+a.Name] = marshalJSON(t, stageProcessLedger("an earlier process", a, cfg, 5))
		sigma, err := stageCalibrate(a, 2, 1e-5, 0.01, 500)
		if err != nil {
			t.Fatal(err)
		}
		got["calibrated/"+a.Name] = marshalJSON(t, sigma)
	}

	// A tuning's per-run event, with and without its one estimate.
	byName := map[string]model.Arch{}
	for _, a := range archs {
		byName[a.Name] = a
	}
	hypers := map[string]tuning.Hyper{}
	mnist := []string{"scatter-linear-mnist", "scatter-cnn-mnist", "scatter-gn-linear-mnist", "tb-mnist"}
	for name, nets := range map[string][]string{
		"mnist-networks": mnist, "dn-mechanisms-differ": {"dn7", "dn5-clip"}, "one-dn": nil,
	} {
		h := tuning.Hyper{Arch: byName["dn7"], Config: stageConfigs["private"], NominalN: 60000, Epochs: 5}
		if nets != nil {
			h.Arch = byName[nets[0]]
			h.Networks = map[string]model.Arch{}
			for _, n := range nets {
				h.Networks[n] = byName[n]
			}
		}
		hypers[name] = h
	}
	for name, h := range hypers {
		space := tuning.Space{Name: "s", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.5, 1}},
			{Name: tuning.BatchSize, Values: []float64{256, 1024}}}}
		if h.Networks != nil {
			names := slices.Sorted(func(yield func(string) bool) {
				for n := range h.Networks {
					if !yield(n) {
						return
					}
				}
			})
			vals := make([]float64, len(names))
			for i := range vals {
				vals[i] = float64(i)
			}
			space.Dims = append(space.Dims, tuning.Dim{Name: tuning.Network, Values: vals, Choices: names})
		}
		for _, shared := range []bool{false, true} {
			key := fmt.Sprintf("hyper/%s/shared=%v", name, shared)
			if shared {
				h.Norm = h.SharedDataNormOf(space)
				got[key+"/norm"] = marshalJSON(t, h.Norm)
				if h.Norm != nil {
					got[key+"/norm-event"] = marshalEvent(t, h.Norm.Event())
				}
			}
			e, err := h.Event(space, 1.1)
			if err != nil {
				t.Fatal(err)
			}
			got[key] = marshalEvent(t, e)
		}
	}

	jobLedgers(t, got, byName)

	if *updateStageLedgers {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(stageLedgersFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(stageLedgersFile)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range want {
			if !yield(k) {
				return
			}
		}
	}) {
		if got[k] != want[k] {
			t.Errorf("%s:\n got %s\nwant %s", k, got[k], want[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: not in %s", k, stageLedgersFile)
		}
	}
}

// jobLedgers adds the ledgers that training and tuning jobs of datanorm
// networks release on tiny seeded data (only what does not depend on the
// noisy scores: the doubling tuner's search is left out).
func jobLedgers(t *testing.T, got map[string]string, byName map[string]model.Arch) {
	ctx := context.Background()
	seed := uint64(3)
	dn6 := dnArch(t, "dn6", model.DataNorm(6, 0, 0))

	train := func(key string, s TrainSpec, stopAt int) {
		t.Helper()
		c := ctx
		if stopAt > 0 {
			var cancel context.CancelFunc
			c, cancel = context.WithCancel(ctx)
			defer cancel()
			s.Progress = func(p TrainProgress) {
				if p.Step == stopAt {
					cancel()
				}
			}
		}
		rel, _, err := Train(c, s)
		if err != nil && !(stopAt > 0 && errors.Is(err, context.Canceled)) {
			t.Fatalf("%s: %v", key, err)
		}
		rep := rel.Report.(*TrainReport)
		got["train/"+key+"/ledger"] = marshalJSON(t, rel.Ledger)
		got["train/"+key+"/report"] = marshalJSON(t, map[string]any{"epsilon": rep.Epsilon, "noise_multiplier": rep.NoiseMultiplier,
			"norm_noise_multiplier": rep.NormNoiseMultiplier, "norm_epsilon": rep.NormEpsilon})
	}
	src := stageData(600)
	src.Arch = dn6
	train("calibrated", TrainSpec{Data: src, Epsilon: 3, Delta: 1e-5, ClipNorm: 1, BatchSize: 50, Epochs: 1, LearningRate: 0.1, Seed: &seed}, 0)
	train("sigma", TrainSpec{Data: src, Delta: 1e-5, NoiseMultiplier: 1.2, ClipNorm: 1, BatchSize: 50, Epochs: 2, LearningRate: 0.1, Seed: &seed}, 0)
	train("stopped", TrainSpec{Data: src, Epsilon: 3, Delta: 1e-5, ClipNorm: 1, BatchSize: 50, Epochs: 2, LearningRate: 0.1, Seed: &seed}, 3)
	train("non-private", TrainSpec{Data: src, NonPrivate: true, BatchSize: 50, Epochs: 1, LearningRate: 0.1, Seed: &seed}, 0)

	tune := func(key string, s TuneSpec) {
		t.Helper()
		rel, _, err := Tune(ctx, s)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		l := rel.Ledger
		if s.Tuner == tuning.DoublingName {
			l = accounting.Ledger{}
			for _, e := range rel.Ledger.Entries {
				if strings.HasPrefix(e.Label, "final") {
					l.Entries = append(l.Entries, e)
				}
			}
		}
		got["tune/"+key+"/ledger"] = marshalJSON(t, l)
		rep, ok := rel.Report.(*TuneReport)
		if ok {
			got["tune/"+key+"/components"] = marshalJSON(t, rep.EpsilonComponents)
			got["tune/"+key+"/sigma"] = marshalJSON(t, rep.BaseNoiseMultiplier)
		}
	}
	dir := t.TempDir()
	dnA, dnB := dnArch(t, "dn-a", model.DataNorm(7, 0, 0)), dnArch(t, "dn-b", model.DataNorm(7, 0.5, 0.5))
	dn10 := dnArch(t, "dn-10", model.DataNorm(10, 0, 0))
	nets := func(as ...model.Arch) tuning.Dim {
		d := tuning.Dim{Name: tuning.Network}
		for i, a := range as {
			d.Values, d.Choices = append(d.Values, float64(i)), append(d.Choices, writeSpec(t, dir, a))
		}
		return d
	}
	lr := tuning.Dim{Name: tuning.LearningRate, Values: []float64{0.1, 0.3, 0.6}}
	base := func(arch model.Arch, dims ...tuning.Dim) TuneSpec {
		s := stageData(600)
		s.Arch = arch
		return TuneSpec{Data: s, Tuner: tuning.GridName, Space: tuning.Space{Name: "s", Dims: dims}, Epsilon: 4, Delta: 1e-5,
			Epochs: 1, BatchSize: 50, Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: &seed}
	}
	tune("grid-shared", base(dn6, lr))
	s := base(dnA, lr, nets(dnA, dnB))
	s.SelectionShare = 0.4
	tune("grid-split-own", s)
	s = base(dnA, lr, nets(dnA, dn10))
	s.SelectionShare, s.Epsilon = 0.4, 8
	tune("grid-split-costliest", s)
	s = base(dn6, lr)
	s.Tuner, s.Repetitions = tuning.RandomStopName, accounting.PoissonRepetitions(2)
	tune("randomstop-shared", s)
	s = base(dn6, tuning.Dim{Name: tuning.LearningRate, Values: []float64{0.1, 0.5}}, tuning.Dim{Name: tuning.ClipNorm, Values: []float64{1}})
	opts := tuning.DoublingOptions{Partitions: 2, Epsilon0: 0.2, Granularity: 0.2, MaxIterations: 4, PartEpochs: 1}
	s.Tuner, s.Options, s.Epsilon, s.Validation, s.ScoreNoise = tuning.DoublingName, opts.Values(), 8, "", 0
	tune("doubling", s)
}
