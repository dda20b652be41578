package job

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// tuneLRs is a grid tuning of two learning rates on 500 random training
// examples (100 more held out for private scores).
func tuneLRs(seed *uint64) TuneSpec {
	return TuneSpec{Data: smallMNIST(600), Tuner: tuning.GridName, Epsilon: 4, Delta: 1e-5, Epochs: 1, BatchSize: 50,
		Space:      tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.3, 0.1}}}},
		Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: seed}
}

// withAutoClip is s with automatic clipping at γ = 0.01.
func withAutoClip(s TuneSpec) TuneSpec {
	s.Clipping, s.AutoClipGamma = dpsgd.AutomaticClipping, dpsgd.DefaultAutoClipGamma
	return s
}

// A tuning with automatic clipping gives every run automatic clipping —
// in this process and in a runner's job input — at the σ, with the ledger
// and ε, of the same tuning with flat clipping; its report.json and
// model.json say so, and its fixed settings hold no clipping norm. A flat
// tuning's job inputs are as they were (no clipping key).
func TestTuneAutoClip(t *testing.T) {
	seed := uint64(6)
	flat, auto := tuneLRs(&seed), withAutoClip(tuneLRs(&seed))
	pf, err := flat.plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pa, err := auto.plan(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if pa.trainer.NoiseMultiplier != pf.trainer.NoiseMultiplier {
		t.Errorf("σ %v under automatic clipping, %v under flat", pa.trainer.NoiseMultiplier, pf.trainer.NoiseMultiplier)
	}
	_, cfg, err := pa.trainer.Hyper().Run(auto.Space.At(0))
	if err != nil {
		t.Fatal(err)
	}
	cfg.NoiseMultiplier = 1
	if cfg.Clipping != dpsgd.AutomaticClipping || cfg.AutoClipGamma != dpsgd.DefaultAutoClipGamma || cfg.ClipNorm != 1 || cfg.Validate() != nil {
		t.Errorf("a candidate's run: %v clipping, γ %v, C %v: %v", cfg.Clipping, cfg.AutoClipGamma, cfg.ClipNorm, cfg.Validate())
	}
	for name, p := range map[string]*tunePlan{"flat": pf, "automatic": pa} {
		task, err := dpsgdJobs{t: p.trainer}.Task("run 1", auto.Space.At(0), &seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		var in runInput
		if err := json.Unmarshal(task.Input, &in); err != nil {
			t.Fatal(err)
		}
		if name == "flat" && (bytes.Contains(task.Input, []byte("clipping")) || in.Clipping != dpsgd.FlatClipping) ||
			name == "automatic" && (in.Clipping != dpsgd.AutomaticClipping || in.AutoClipGamma != dpsgd.DefaultAutoClipGamma || in.ClipNorm != 1) {
			t.Errorf("%s: the runner's job input %s", name, task.Input)
		}
	}
	reports := map[string]*TuneReport{}
	for name, s := range map[string]TuneSpec{"flat": flat, "automatic": auto} {
		rel, _, err := Tune(context.Background(), s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		reports[name] = rel.Report.(*TuneReport)
		if c := rel.hyper["clipping"]; (name == "automatic") != (c == "automatic") {
			t.Errorf("%s: model.json's clipping %v", name, c)
		}
	}
	f, a := reports["flat"], reports["automatic"]
	fl, _ := json.Marshal(f.Ledger)
	al, _ := json.Marshal(a.Ledger)
	if a.Clipping != "automatic" || a.AutoClipGamma != dpsgd.DefaultAutoClipGamma || f.Clipping != "" {
		t.Errorf("clipping facts: automatic %q γ %v, flat %q", a.Clipping, a.AutoClipGamma, f.Clipping)
	}
	if a.Epsilon != f.Epsilon || !bytes.Equal(fl, al) {
		t.Errorf("automatic clipping: ε %v, ledger %s; flat: ε %v, ledger %s", a.Epsilon, al, f.Epsilon, fl)
	}
	if _, ok := a.Fixed[tuning.ClipNorm]; ok {
		t.Errorf("automatic clipping states a fixed clipping norm: %v", a.Fixed)
	}
}

// A tuning's clipping is checked before any data is read: automatic
// clipping with a space that has a clip_norm dimension, or with a
// stability constant that is not positive and finite; flat clipping with a
// stability constant; an unknown rule.
func TestTuneAutoClipRefused(t *testing.T) {
	loaded := false
	for name, mod := range map[string]func(*TuneSpec){
		"clip_norm dimension": func(s *TuneSpec) {
			s.Space.Dims = append(s.Space.Dims, tuning.Dim{Name: tuning.ClipNorm, Values: []float64{0.1, 1}})
		},
		"γ = 0":   func(s *TuneSpec) { s.AutoClipGamma = 0 },
		"γ < 0":   func(s *TuneSpec) { s.AutoClipGamma = -1 },
		"flat, γ": func(s *TuneSpec) { s.Clipping = dpsgd.FlatClipping },
		"unknown": func(s *TuneSpec) { s.Clipping = dpsgd.Clipping(4) },
	} {
		s := withAutoClip(tuneLRs(nil))
		load := s.Data.Load
		s.Data.Load = func() (*data.Dataset, *data.Dataset, error) { loaded = true; return load() }
		mod(&s)
		if _, _, err := Tune(context.Background(), s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
		if _, err := EveryCandidate(context.Background(), s, nil); !errors.Is(err, ErrInvalid) {
			t.Errorf("EveryCandidate, %s: %v, want ErrInvalid", name, err)
		}
	}
	if loaded {
		t.Error("a refused tuning read the data")
	}
}

// Under automatic clipping a built-in network's own settings stand as
// Bu et al.'s equivalent: η·C for the learning rate (scatter-linear-mnist:
// 4 at C = 0.1 becomes 0.4), no clipping norm — for the runs whose space
// leaves them out and for the default among the candidates; the default
// space loses its clip_norm dimension (WithoutClipNorm).
func TestTuneAutoClipDefaults(t *testing.T) {
	a := model.Arch{Spec: model.ScatterLinearMNIST, C: 1, H: 28, W: 28, Classes: 10}
	s := withAutoClip(TuneSpec{Data: Source{Name: "mnist", Arch: a, NominalN: 60000}, IncludeDefault: true,
		Space: tuning.Space{Name: "bs", Dims: []tuning.Dim{{Name: tuning.BatchSize, Values: []float64{2048, 4096}}}}})
	if lr, clip := s.fixed(); lr != 0.4 || clip != 1 {
		t.Errorf("fixed: η %v, C %v; want 0.4, 1", lr, clip)
	}
	if got := s.fixedUsed(); len(got) != 1 || got[tuning.LearningRate] != 0.4 {
		t.Errorf("fixedUsed %v", got)
	}
	// The default among the candidates, on Fashion-MNIST (dptune's own
	// MNIST settings, chosen on MNIST's training data, are no candidate in
	// a tuning of MNIST): Tramèr & Boneh's η = 16 at C = 0.1, batch 8192.
	fs := s
	fs.Data.Name = "fashion-mnist"
	c, _, err := fs.defaultCandidate(tuning.Uses{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Values[tuning.ClipNorm]; ok || c.Values[tuning.LearningRate] != autoClipLearningRate(16, 0.1) || c.Values[tuning.BatchSize] != 8192 {
		t.Errorf("the default candidate %v", c.Values)
	}
	// On MNIST, dptune's own settings (chosen on MNIST's training data)
	// give way to the published ones they were chosen around: Tramèr &
	// Boneh's η = 8 at C = 0.1, batch 4096.
	mc, _, err := s.defaultCandidate(tuning.Uses{Default: true})
	if err != nil || mc.Values[tuning.LearningRate] != autoClipLearningRate(8, 0.1) || mc.Values[tuning.BatchSize] != 4096 {
		t.Errorf("the default candidate of a tuning of MNIST: %v (%v), want Tramèr & Boneh's published settings", mc.Values, err)
	}
	if b, _ := fs.Baseline(); fs.isBaseline(b, c.Values, nil) {
		t.Error("an automatic-clipping run counted as the flat baseline's settings")
	}
	grid, ok := tuning.BuiltinSpace("mnist-dphypo")
	if !ok {
		t.Fatal("no mnist-dphypo space")
	}
	w := WithoutClipNorm(grid)
	if hasDim(w, tuning.ClipNorm) || !hasDim(grid, tuning.ClipNorm) || len(w.Dims) != len(grid.Dims)-1 || w.Name == grid.Name {
		t.Errorf("WithoutClipNorm(%v) = %v", grid, w)
	}
}

// The doubling tuner's part runs clip as the tuning does: the partition
// scorer takes automatic clipping from the final run, and its job input
// carries it.
func TestDoublingAutoClip(t *testing.T) {
	seed := uint64(2)
	flat := tuneLRs(&seed)
	flat.Tuner, flat.Validation, flat.ScoreNoise = tuning.DoublingName, "", 0
	flat.Options = tuning.Values{"partitions": 2}
	for name, s := range map[string]TuneSpec{"flat": flat, "automatic": withAutoClip(flat)} {
		p, err := s.plan(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan := p.tuner.(tuning.Partitioned).Plan(p.spec, p.trainer.Hyper(), p.trainer.NoiseMultiplier)
		scorer := plan.Scorer()
		if auto := name == "automatic"; auto != (scorer.Clipping == dpsgd.AutomaticClipping && scorer.AutoClipGamma == dpsgd.DefaultAutoClipGamma && scorer.ClipNorm == 1) {
			t.Errorf("%s: the scorer clips %v (γ %v, C %v)", name, scorer.Clipping, scorer.AutoClipGamma, scorer.ClipNorm)
		}
		task, err := partitionTask(scorer, dataRef{})(s.Space.At(0), 0)
		if err != nil {
			t.Fatal(err)
		}
		var in partInput
		if err := json.Unmarshal(task.Input, &in); err != nil {
			t.Fatal(err)
		}
		if in.Clipping != scorer.Clipping || in.AutoClipGamma != scorer.AutoClipGamma {
			t.Errorf("%s: the part run's job input %s", name, task.Input)
		}
	}
}
