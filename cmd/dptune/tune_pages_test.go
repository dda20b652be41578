package main

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// tuningPages writes tuning.html beside a saved release, and with
// --diagnostics the NOT PRIVATE page in OUT-curator, naming both on the
// terminal; nothing for a release that was not saved; and a page it cannot
// write is a note, not an error.
func TestTuningPages(t *testing.T) {
	seed := uint64(3)
	src := job.Source{Name: "tiny", Arch: model.MNIST, NominalN: 600, Load: func() (*data.Dataset, *data.Dataset, error) {
		rng := rand.New(rand.NewPCG(1, 2))
		mk := func(n int) *data.Dataset {
			d := &data.Dataset{Name: "tiny", N: n, C: 1, H: 28, W: 28, Classes: 10, X: make([]float32, n*784), Y: make([]uint8, n)}
			for i := range d.Y {
				d.Y[i] = uint8(rng.IntN(10))
				for k := 0; k < 784; k++ {
					d.X[i*784+k] = float32(rng.NormFloat64()*0.3) + float32(boolInt(k%10 == int(d.Y[i])))
				}
			}
			return d
		}
		return mk(600), mk(50), nil
	}}
	spec := job.TuneSpec{Data: src, Tuner: "randomstop", Epsilon: 8, Delta: 1e-5, Epochs: 1, BatchSize: 50,
		Space:       tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1, 0.5}}}},
		Repetitions: accounting.PoissonRepetitions(3), Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: &seed, Diagnostics: true}
	rel, diag, err := job.Tune(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "tune")
	if err := rel.Save(out); err != nil {
		t.Fatal(err)
	}
	page, curator := filepath.Join(out, "tuning.html"), filepath.Join(job.CuratorDir(out), "tuning-not-private.html")

	var w strings.Builder
	tuningPages(&w, tuneFlags{TuneRequest: job.TuneRequest{Out: out}}, spec, errors.New("disk full"), diag)
	if _, err := os.Stat(page); !os.IsNotExist(err) || w.Len() != 0 {
		t.Fatalf("a release that was not saved got a page (%v) or a note %q", err, w.String())
	}
	tuningPages(&w, tuneFlags{TuneRequest: job.TuneRequest{Out: out, Diagnostics: filepath.Join(t.TempDir(), "d.json")}}, spec, nil, diag)
	for _, p := range []string{page, curator} {
		if _, err := os.Stat(p); err != nil || !strings.Contains(w.String(), p) {
			t.Errorf("%s: %v; the terminal says %q", p, err, w.String())
		}
	}
	if !strings.Contains(w.String(), "NOT PRIVATE") {
		t.Errorf("the curator page is not named NOT PRIVATE: %q", w.String())
	}
	// Without --diagnostics no curator page is left, whatever diag holds.
	w.Reset()
	tuningPages(&w, tuneFlags{TuneRequest: job.TuneRequest{Out: out}}, spec, nil, diag)
	if _, err := os.Stat(curator); !os.IsNotExist(err) || strings.Contains(w.String(), curator) {
		t.Errorf("a curator page without --diagnostics: %v, %q", err, w.String())
	}
	// A page that cannot be written is a note.
	w.Reset()
	other := spec
	other.Space.Name = "another"
	tuningPages(&w, tuneFlags{TuneRequest: job.TuneRequest{Out: out}}, other, nil, nil)
	if !strings.HasPrefix(w.String(), "note: the tuning's pages were not written") {
		t.Errorf("terminal: %q", w.String())
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// dptune tune writes tuning.html beside report.json, and with
// --diagnostics the NOT PRIVATE page in OUT-curator, and names both.
func TestTuneWritesItsPages(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	dir := t.TempDir()
	space := filepath.Join(dir, "space.json")
	os.WriteFile(space, []byte(`{"name": "small", "dims": [{"name": "learning_rate", "values": [0.5, 1], "log": true}]}`), 0o644)
	out := filepath.Join(dir, "t")
	code, text := run(t, "tune", "--tuner", "randomstop", "--space", space, "--epochs", "1", "--mean-runs", "2",
		"--epsilon", "8", "--seed", "3", "--out", out, "--diagnostics", filepath.Join(dir, "diagnostics.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, text)
	}
	for _, p := range []string{filepath.Join(out, "tuning.html"), filepath.Join(job.CuratorDir(out), "tuning-not-private.html")} {
		if _, err := os.Stat(p); err != nil || !strings.Contains(text, p) {
			t.Errorf("%s: %v; the terminal says:\n%s", p, err, text)
		}
	}
}
