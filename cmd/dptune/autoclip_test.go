package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Bad clipping flags end with a one-line error and status 2 before any
// work: a --clipping other than flat or automatic, --clipping automatic
// with an explicit --clip-norm, a stability constant that is not finite and
// at least 1e-6 (dpsgd.MinAutoClipGamma: below it a zero gradient's factor
// left float32) or given without --clipping automatic, a clipping rule for
// non-private training; for tune, a --space with a clip_norm dimension
// under --clipping automatic, and --clipping with the vote tuner.
func TestAutoClipBadInputExit2(t *testing.T) {
	for _, args := range [][]string{
		{"train", "--clipping", "auto"},
		{"train", "--clipping", "Automatic"},
		{"train", "--clipping", "automatic", "--clip-norm", "0.1"},
		{"train", "--clipping", "automatic", "--clip-norm", "1"},
		{"train", "--clipping", "automatic", "--auto-clip-gamma", "0"},
		{"train", "--clipping", "automatic", "--auto-clip-gamma", "-0.01"},
		{"train", "--clipping", "automatic", "--auto-clip-gamma", "NaN"},
		{"train", "--clipping", "automatic", "--auto-clip-gamma", "+Inf"},
		{"train", "--clipping", "automatic", "--auto-clip-gamma", "1e-300"},
		{"train", "--clipping", "automatic", "--auto-clip-gamma", "9.9e-7"},
		{"train", "--auto-clip-gamma", "0.1"},
		{"train", "--clipping", "flat", "--auto-clip-gamma", "0.1"},
		{"train", "--non-private", "--clipping", "automatic"},
		{"train", "--non-private", "--auto-clip-gamma", "0.1"},
		{"tune", "--clipping", "auto"},
		{"tune", "--clipping", "automatic", "--auto-clip-gamma", "0"},
		{"tune", "--clipping", "automatic", "--auto-clip-gamma", "Inf"},
		{"tune", "--clipping", "automatic", "--auto-clip-gamma", "1e-300"},
		{"tune", "--auto-clip-gamma", "0.1"},
		{"tune", "--clipping", "automatic", "--space", "mnist-dphypo"},
		{"tune", "--tuner", "doubling", "--clipping", "automatic", "--space", "mnist-doubling"},
		{"tune", "--tuner", "grid", "--clipping", "automatic", "--space", "mnist-doubling"},
		{"tune", "--tuner", "vote", "--clipping", "automatic"},
	} {
		expectExit2(t, 2*time.Second, "", args...)
	}
}

// train --clipping automatic trains with automatic clipping and says so:
// on the terminal, and in report.json ("clipping": "automatic", γ,
// clip_norm 1) at the ε of flat clipping's σ. A built-in network's own
// learning rate η at C becomes η·C when --lr is not given.
func TestTrainAutoClip(t *testing.T) {
	data := writeMNISTDir(t, 600, 100, -1)
	out := filepath.Join(t.TempDir(), "auto")
	code, text := run(t, "train", "--data-dir", data, "--nominal-size", "600", "--batch-size", "50", "--epochs", "1",
		"--epsilon", "8", "--seed", "3", "--clipping", "automatic", "--auto-clip-gamma", "0.05", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, text)
	}
	if !strings.Contains(text, "automatic clipping (γ = 0.05)") {
		t.Errorf("the run does not say it clips automatically:\n%s", text)
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep["clipping"] != "automatic" || rep["auto_clip_gamma"] != 0.05 || rep["clip_norm"] != 1.0 {
		t.Errorf("report.json: clipping %v, γ %v, clip_norm %v", rep["clipping"], rep["auto_clip_gamma"], rep["clip_norm"])
	}
	// The network's settings (η = 4 at C = 0.1) give η = 0.4; the run is
	// stopped by an impossible ε before any data is read.
	_, text = run(t, "train", "--model", "scatter-linear-mnist", "--clipping", "automatic", "--epsilon", "1e-9", "--out", filepath.Join(t.TempDir(), "x"))
	if !strings.Contains(text, "automatic clipping: learning rate 0.4, the network's η = 4 at C = 0.1 times C") {
		t.Errorf("scatter-linear-mnist under automatic clipping:\n%s", text)
	}
}

// tune --clipping automatic takes the default space without its clip_norm
// dimension (mnist-dphypo's learning rates alone): the tuning passes every
// check up to the noise calibration, which an impossible ε then refuses.
func TestTuneAutoClipDefaultSpace(t *testing.T) {
	code, out := run(t, "tune", "--tuner", "randomstop", "--clipping", "automatic", "--epsilon", "0.01", "--out", filepath.Join(t.TempDir(), "t"))
	if code != 2 || strings.Contains(out, "clip_norm") || !strings.Contains(out, "too small") {
		t.Errorf("exit %d: %s", code, out)
	}
}
