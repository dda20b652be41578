package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
)

// A task on a remote worker (runner.OnWorker) refuses, in one line
// wrapping runner.ErrInvalidInput, a data reference without the curator's
// digest (its own, or its public validation set's), in a training run and
// in an audit's trials alike; in this process a reference needs none.
func TestWorkerRefusesDataWithoutDigest(t *testing.T) {
	resetDataCache(t)
	dir := noiseFolder(t, "digits", 12, 1)
	src, _, err := folderDataset(dir, &linearSpec, 120, FolderSettings{})
	if err != nil {
		t.Fatal(err)
	}
	bare := src.ref()
	bare.Validation = "test"
	onWorker := runner.OnWorker(context.Background())
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, runner.ErrInvalidInput) || !strings.Contains(err.Error(), "without the curator's content digest") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a one-line refusal wrapping runner.ErrInvalidInput", what, err)
		}
	}
	if bare.Digest != nil {
		t.Fatal("a local source's reference has a digest")
	}
	_, err = bare.resolve(onWorker)
	refused("a run's data on a worker", err)
	if _, err := bare.resolve(context.Background()); err != nil {
		t.Errorf("the same data in this process: %v", err)
	}

	w := src.ForRunner(workers{key: [32]byte{9}})
	if _, _, err := w.Load(); err != nil {
		t.Fatal(err)
	}
	checked := w.ref()
	checked.Validation = "test"
	if _, err := checked.resolve(onWorker); err != nil {
		t.Errorf("data with its digest on a worker: %v", err)
	}
	pub := bare
	checked.Validation, checked.Public = "public", &pub
	_, err = checked.resolve(onWorker)
	refused("a public validation set on a worker", err)

	in, err := json.Marshal(auditInput{Data: &bare, Trials: []int{0}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = doAuditTrials(onWorker, in)
	refused("an audit's data on a worker", err)
}

// An audit on data read for workers (its reference carrying the keyed
// digest) records the data in its CSV header (Params) without the
// digest's key or MAC.
func TestAuditParamsLeaveOutDigest(t *testing.T) {
	dir := noiseFolder(t, "digits", 12, 1)
	src, _, err := folderDataset(dir, &linearSpec, 120, FolderSettings{})
	if err != nil {
		t.Fatal(err)
	}
	w := src.ForRunner(workers{key: [32]byte{9}})
	if _, _, err := w.Load(); err != nil {
		t.Fatal(err)
	}
	d := w.ref().Digest
	if d == nil {
		t.Fatal("no digest")
	}
	s := AuditSpec{Protocol: AuditTuner, Trials: 10, Seed: 2, Delta: 1e-5, Data: w, Size: 10, NoiseMultiplier: 1.5, SamplingRate: 1,
		ClipNorm: 1, Steps: 2, Repetitions: accounting.PoissonRepetitions(2)}
	ps, err := s.Params()
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ToLower(fmt.Sprint(ps))
	if !strings.Contains(text, "folder:digits") {
		t.Fatalf("the header does not record the data: %v", ps)
	}
	key := fmt.Sprint(d.Key)
	if b, err := json.Marshal(d.Key); err == nil {
		key = strings.Trim(string(b), `"`)
	}
	for _, p := range ps {
		if k := strings.ToLower(p.Key); strings.Contains(k, "digest") || strings.Contains(k, "mac") || strings.Contains(k, "key") && k != "data.subset.key" {
			t.Errorf("the audit's parameters hold %s", p.Key)
		}
	}
	for _, leak := range []string{strings.ToLower(d.MAC), strings.ToLower(key)} {
		if strings.Contains(text, leak) {
			t.Errorf("the audit's parameters hold %q: %v", leak, ps)
		}
	}
	if r := w.ref(); r.Digest == nil || r.withoutDigest().Digest != nil {
		t.Error("withoutDigest")
	}
}
