package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// The doubling tuner's summary prints the learning rate and clipping norm
// its runs used. A space without clip_norm runs every candidate at the
// network's own clipping norm (job.NetworkDefaults) or else 1, and one
// without learning_rate at the network's own or job.DefaultLearningRate
// (job.TuneSpec): the summary says so, marked fixed, as does report.json's
// "fixed", instead of a missing selection's 0.
func TestDoublingPrintsTheFixedSettingsItUsed(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes twice on 1,000 examples")
	}
	wantLR, wantClip := job.DefaultLearningRate, 1.0
	if d, ok := job.NetworkDefaults(model.TBMNIST); ok { // mnist's default network
		wantLR, wantClip = d.LearningRate, d.ClipNorm
	}
	data := writeMNISTDir(t, 1000, 40, -1)
	for _, c := range []struct {
		space, dim string
		want       string
		value      float64
	}{
		{`{"name": "lr", "dims": [{"name": "learning_rate", "values": [0.5, 1, 2]}]}`, tuning.ClipNorm, fmt.Sprintf("clipping norm %.4g (fixed)", wantClip), wantClip},
		{`{"name": "clip", "dims": [{"name": "clip_norm", "values": [0.5, 2]}]}`, tuning.LearningRate, fmt.Sprintf("learning rate %.4g (fixed)", wantLR), wantLR},
	} {
		out := filepath.Join(t.TempDir(), "o")
		code, text := run(t, "tune", "--tuner", "doubling", "--space", writeFile(t, "space.json", c.space), "--partitions", "2", "--part-epochs", "1",
			"--data-dir", data, "--nominal-size", "1000", "--batch-size", "50", "--epochs", "1", "--epsilon", "8", "--seed", "1", "--val-size", "100", "--out", out)
		if code != 0 {
			t.Fatalf("tune: exit %d: %s", code, text)
		}
		if !strings.Contains(text, c.want) || strings.Contains(text, " 0,") || strings.Contains(text, "norm 0\n") {
			t.Errorf("summary lacks %q:\n%s", c.want, text)
		}
		var fixed map[string]float64
		if err := json.Unmarshal(readReport(t, filepath.Join(out, "report.json"))["fixed"], &fixed); err != nil || len(fixed) != 1 || fixed[c.dim] != c.value {
			t.Errorf("report.json fixed = %v (%v), want {%s: %v}", fixed, err, c.dim, c.value)
		}
	}
}
