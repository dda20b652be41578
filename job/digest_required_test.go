package job

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

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
