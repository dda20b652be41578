package job

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
)

// autoSpec is s with automatic clipping at γ = 0.01 in place of its
// clipping norm.
func autoSpec(s TrainSpec) TrainSpec {
	s.ClipNorm, s.Clipping, s.AutoClipGamma = 0, dpsgd.AutomaticClipping, dpsgd.DefaultAutoClipGamma
	return s
}

// Automatic clipping is flat clipping's mechanism at C = 1 (sensitivity
// 1): calibrated to the same ε, a run has the same σ, the same ledger —
// the DP-SGD event with sensitivity 1 — and the same ε as a flat run at
// the same σ, sampling rate and steps. Its report.json and model.json say
// "clipping": "automatic" with γ and clip_norm 1; a flat run's say
// nothing new (its release is as it was). The export check accepts both.
func TestTrainAutoClipEpsilonIsFlats(t *testing.T) {
	seed := uint64(5)
	flat := TrainSpec{Data: smallMNIST(60), Epsilon: 3, Delta: 1e-5, ClipNorm: 0.1, BatchSize: 10, Epochs: 2, LearningRate: 0.1, Seed: &seed}
	releases := map[string]*Release{}
	for name, s := range map[string]TrainSpec{"flat": flat, "automatic": autoSpec(flat)} {
		rel, _, err := Train(context.Background(), s)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		releases[name] = rel
		dir := filepath.Join(t.TempDir(), name)
		if err := rel.Save(dir); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil {
			t.Fatal(err)
		}
		net, md, err := model.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		var rep, hyper map[string]any
		if err := json.Unmarshal(b, &rep); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(md.Hyperparameters, &hyper); err != nil {
			t.Fatal(err)
		}
		for what, m := range map[string]map[string]any{"report.json": rep, "model.json": hyper} {
			c, hasC := m["clipping"]
			g, hasG := m["auto_clip_gamma"]
			switch {
			case name == "flat" && (hasC || hasG):
				t.Errorf("flat: %s states clipping %v, γ %v", what, c, g)
			case name == "automatic" && (c != "automatic" || g != 0.01 || m["clip_norm"] != 1.0):
				t.Errorf("automatic: %s states clipping %v, γ %v, clip_norm %v", what, c, g, m["clip_norm"])
			}
		}
		if _, err := ExportMetadata(dir, net, md); err != nil {
			t.Errorf("%s: the export refuses the release: %v", name, err)
		}
	}
	f, a := releases["flat"].Report.(*TrainReport), releases["automatic"].Report.(*TrainReport)
	if a.Clipping != "automatic" || a.AutoClipGamma != dpsgd.DefaultAutoClipGamma || a.ClipNorm != 1 || f.Clipping != "" || f.ClipNorm != 0.1 {
		t.Errorf("clipping facts: flat %q C = %v, automatic %q γ = %v C = %v", f.Clipping, f.ClipNorm, a.Clipping, a.AutoClipGamma, a.ClipNorm)
	}
	fl, err := json.Marshal(f.Ledger)
	if err != nil {
		t.Fatal(err)
	}
	al, _ := json.Marshal(a.Ledger)
	if f.NoiseMultiplier != a.NoiseMultiplier || !bytes.Equal(fl, al) || f.Epsilon == nil || a.Epsilon == nil || *f.Epsilon != *a.Epsilon {
		t.Errorf("automatic clipping: σ %v, ε %v, ledger %s; flat clipping: σ %v, ε %v, ledger %s", a.NoiseMultiplier, *a.Epsilon, al, f.NoiseMultiplier, *f.Epsilon, fl)
	}
	if !bytes.Contains(al, []byte(`"sensitivity":1`)) {
		t.Errorf("the automatic run's ledger does not record sensitivity 1: %s", al)
	}
	if *a.Epsilon > 3 {
		t.Errorf("ε %v above the target 3", *a.Epsilon)
	}
	// At a given σ too, under either accountant.
	for _, acc := range []string{"rdp", "pld"} {
		s := TrainSpec{Data: smallMNIST(60), Delta: 1e-5, NoiseMultiplier: 1.3, ClipNorm: 1, BatchSize: 10, Epochs: 2, LearningRate: 0.1, Seed: &seed, Accountant: acc}
		rf, _, err := Train(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		ra, _, err := Train(context.Background(), autoSpec(s))
		if err != nil {
			t.Fatal(err)
		}
		ef, ea := rf.Report.(*TrainReport).Epsilon, ra.Report.(*TrainReport).Epsilon
		if ef == nil || ea == nil || *ef != *ea {
			t.Errorf("%s, σ = 1.3: automatic clipping ε %v, flat %v", acc, ea, ef)
		}
	}
}

// A clipping rule a run cannot have is refused before any work, with an
// error wrapping ErrInvalid: automatic clipping with a clipping norm or a
// stability constant that is not finite and at least dpsgd.MinAutoClipGamma,
// flat clipping with a stability constant, an unknown rule, or any rule
// with non-private
// training.
func TestTrainAutoClipRefused(t *testing.T) {
	loaded := false
	src := smallMNIST(60)
	load := src.Load
	src.Load = func() (*data.Dataset, *data.Dataset, error) { loaded = true; return load() }
	base := TrainSpec{Data: src, Epsilon: 3, Delta: 1e-5, BatchSize: 10, Epochs: 2, LearningRate: 0.1}
	for name, mod := range map[string]func(*TrainSpec){
		"automatic with a clipping norm": func(s *TrainSpec) { s.Clipping, s.AutoClipGamma, s.ClipNorm = dpsgd.AutomaticClipping, 0.01, 0.1 },
		"γ = 0":                          func(s *TrainSpec) { s.Clipping = dpsgd.AutomaticClipping },
		"γ < 0":                          func(s *TrainSpec) { s.Clipping, s.AutoClipGamma = dpsgd.AutomaticClipping, -0.01 },
		"γ NaN":                          func(s *TrainSpec) { s.Clipping, s.AutoClipGamma = dpsgd.AutomaticClipping, math.NaN() },
		"γ +Inf":                         func(s *TrainSpec) { s.Clipping, s.AutoClipGamma = dpsgd.AutomaticClipping, math.Inf(1) },
		"γ = 1e-300":                     func(s *TrainSpec) { s.Clipping, s.AutoClipGamma = dpsgd.AutomaticClipping, 1e-300 },
		"γ below the floor":              func(s *TrainSpec) { s.Clipping, s.AutoClipGamma = dpsgd.AutomaticClipping, dpsgd.MinAutoClipGamma/2 },
		"flat with γ":                    func(s *TrainSpec) { s.ClipNorm, s.AutoClipGamma = 1, 0.01 },
		"unknown rule":                   func(s *TrainSpec) { s.ClipNorm, s.Clipping = 1, dpsgd.Clipping(5) },
		"non-private": func(s *TrainSpec) {
			s.NonPrivate, s.Epsilon, s.Clipping, s.AutoClipGamma = true, 0, dpsgd.AutomaticClipping, 0.01
		},
	} {
		s := base
		mod(&s)
		if _, _, err := Train(context.Background(), s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if loaded {
		t.Error("a refused spec read its data")
	}
}

// A run with automatic clipping keeps it in its checkpoint: a seeded run
// interrupted after step 8 and resumed ends bit for bit as the same run
// uninterrupted, and its release says automatic clipping.
func TestResumeKeepsAutoClip(t *testing.T) {
	dir := writeMNISTFiles(t, 60)
	seed := uint64(9)
	whole := autoSpec(checkpointedSpec(t, dir, filepath.Join(t.TempDir(), "whole")))
	whole.Seed, whole.NoiseMultiplier = &seed, 0.8
	want, _, err := Train(context.Background(), whole)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	s := autoSpec(checkpointedSpec(t, dir, out))
	s.Seed, s.NoiseMultiplier = &seed, 0.8
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Progress = func(p TrainProgress) {
		if p.Step == 8 {
			cancel()
		}
	}
	if _, _, err := Train(ctx, s); !errors.Is(err, context.Canceled) {
		t.Fatalf("Train: %v", err)
	}
	var started dpsgd.Config
	got, _, err := ResumeTrain(context.Background(), out, TrainHooks{Started: func(c dpsgd.Config) { started = c }})
	if err != nil {
		t.Fatal(err)
	}
	rep := got.Report.(*TrainReport)
	if started.Clipping != dpsgd.AutomaticClipping || started.AutoClipGamma != dpsgd.DefaultAutoClipGamma || rep.Clipping != "automatic" || rep.Steps != 12 {
		t.Errorf("resumed as %v clipping (γ = %v), report %q after %d steps", started.Clipping, started.AutoClipGamma, rep.Clipping, rep.Steps)
	}
	if !slices.Equal(got.Model.Params, want.Model.Params) {
		t.Error("the resumed run's parameters differ from the uninterrupted run's")
	}
	if strings.Contains(rep.EpsilonNote, "planned") {
		t.Errorf("note %q", rep.EpsilonNote)
	}
}
