//go:build unix

package audit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/internal/fsx/fsxtest"
)

// A FIFO as the trial file is refused at once by CheckCSV and by Run,
// with an error wrapping fsx.ErrNotRegular, instead of waiting for a
// writer in open(2).
func TestCSVRefusesFIFO(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trials.csv")
	fsxtest.Mkfifo(t, path)
	cfg := Config{Trials: 10, Seed: 1, CSV: path, Protocol: []Param{{"kind", "test game"}}}
	if err := fsxtest.Within(t, func() error { return CheckCSV(cfg) }); !errors.Is(err, fsx.ErrNotRegular) {
		t.Errorf("CheckCSV of a FIFO: %v, want fsx.ErrNotRegular", err)
	}
	if err := fsxtest.Within(t, func() error { _, _, err := Run(context.Background(), game, cfg); return err }); !errors.Is(err, fsx.ErrNotRegular) {
		t.Errorf("Run with a FIFO: %v, want fsx.ErrNotRegular", err)
	}
}

// A trial file longer than its header and Trials lines can be is refused
// before it is read (fsx.ErrTooLarge), not read whole into memory.
func TestCSVRefusesOversizedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trials.csv")
	cfg := Config{Trials: 10, Seed: 1, CSV: path, Protocol: []Param{{"kind", "test game"}}}
	big := header(cfg.fields()) + strings.Repeat("0,0,0\n", (maxHeader+10*maxRecord)/6+1)
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Run(context.Background(), game, cfg); !errors.Is(err, fsx.ErrTooLarge) {
		t.Errorf("Run with a %d-byte trial file of 10 trials: %v, want fsx.ErrTooLarge", len(big), err)
	}
}
