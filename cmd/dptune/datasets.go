package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd/accounting"
	"github.com/dptune/dptune/dpsgd/accounting/budget"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// datasetInfo is what the tool knows about a dataset before loading it.
type datasetInfo struct {
	arch model.Arch
	// trainN is the published size of the training set: the nominal size
	// every sampling rate and divisor uses unless --nominal-size says
	// otherwise.
	trainN int
	load   func(dir string) (train, test *data.Dataset, err error)
}

var datasets = map[string]datasetInfo{
	"mnist":   {model.MNIST, 60000, data.LoadMNIST},
	"cifar10": {model.CIFAR10, 50000, data.LoadCIFAR10},
}

// lookupDataset returns the dataset called name, or a usage error.
func lookupDataset(name string) (datasetInfo, error) {
	d, ok := datasets[name]
	if !ok {
		return datasetInfo{}, usagef("unknown dataset %q (want mnist or cifar10)", name)
	}
	return d, nil
}

// dataFlags are the flags of every command that reads the private data.
type dataFlags struct {
	dataset, dataDir, budget string
	nominalSize              int
}

func addDataFlags(fl *pflag.FlagSet, d *dataFlags) {
	fl.StringVar(&d.dataset, "dataset", "mnist", "dataset: mnist or cifar10")
	fl.StringVar(&d.dataDir, "data-dir", "", "directory of the dataset's files (default for mnist: the GoMNIST module in the Go module cache)")
	fl.IntVar(&d.nominalSize, "nominal-size", 0, "public size of the training set in --data-dir, used for every sampling rate and divisor (default: the dataset's published size, 60000 for mnist, 50000 for cifar10); the loaded count is never used")
	fl.StringVar(&d.budget, "budget", "", "curator's budget file (dptune budget init): the run is refused if it could exceed it, and is recorded in it")
}

// nominal returns the training set's nominal size: --nominal-size when
// given (only with --data-dir), else the published size. Released numbers
// depend on it, never on a count of the private data.
func (d dataFlags) nominal(cmd *cobra.Command, ds datasetInfo) (int, error) {
	if !cmd.Flags().Changed("nominal-size") {
		return ds.trainN, nil
	}
	if d.dataDir == "" {
		return 0, usagef("--nominal-size declares the size of the data in --data-dir; give --data-dir too")
	}
	if d.nominalSize < 1 || d.nominalSize > 1<<31 {
		return 0, usagef("--nominal-size %d is outside [1, 2^31]", d.nominalSize)
	}
	return d.nominalSize, nil
}

// loadDataset reads the dataset from dir; for MNIST an empty dir means the
// GoMNIST module's files in the Go module cache. A training set whose size
// differs from nominal (when nominal > 0) only draws a warning on w: the
// size used everywhere is the nominal one.
func loadDataset(w io.Writer, name string, d datasetInfo, dir string, nominal int) (train, test *data.Dataset, err error) {
	if dir == "" {
		if name != "mnist" {
			return nil, nil, usagef("--data-dir is required for %s (the directory holding its binary files)", name)
		}
		if dir, err = data.MNISTDir(); err != nil {
			return nil, nil, err
		}
	}
	train, test, err = d.load(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("loading %s: %w", name, err)
	}
	if nominal > 0 && train.N != nominal {
		fmt.Fprintf(w, "warning: %s holds %d training examples, not the nominal %d; sampling rates and divisors use the nominal size (curator-side note)\n", dir, train.N, nominal)
	}
	return train, test, nil
}

// loadSpace loads the search space called name (a builtin or a JSON file)
// and checks that the DP-SGD trainer understands it; an empty name means
// the dataset's DP-HyPO grid.
func loadSpace(name, dataset string) (tuning.Space, error) {
	if name == "" {
		name = map[string]string{"mnist": "mnist-dphypo", "cifar10": "cifar10-dphypo"}[dataset]
	}
	s, err := tuning.LoadSpace(name)
	if err != nil {
		return s, err
	}
	return s, tuning.CheckDPSGDSpace(s)
}

// checkWritable makes dir and checks a file can be written in it, before
// any work that would be lost if saving failed.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return usagef("--out %s is not a writable directory: %v", dir, err)
	}
	f, err := os.CreateTemp(dir, ".dptune-write-check-*")
	if err != nil {
		return usagef("--out %s is not writable: %v", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// checkBudgetUnseeded refuses --seed with --budget: seeded runs draw the
// same noise stream on every run, so runs on one budget would be correlated,
// and the budget's filter is valid only for independent randomness (a
// second seeded run with another noise multiplier or learning rate can
// cancel the first one's noise).
func (d dataFlags) checkBudgetUnseeded(cmd *cobra.Command) error {
	if d.budget != "" && cmd.Flags().Changed("seed") {
		return usagef("--budget does not take --seed: seeded runs reuse their noise across runs, which the budget cannot count; run unseeded")
	}
	return nil
}

// charge is a run's reservation in the budget file (none without --budget)
// and the worst case it reserved.
type charge struct {
	r     *budget.Reservation
	worst accounting.Ledger
}

// reserve charges worst, the most the run can spend, to the budget file (if
// any) before the run touches the data. A run the budget cannot afford is a
// usage error (exit 2). End the charge with done, whatever happens.
func reserve(path, dataset, command, label string, worst accounting.Ledger) (*charge, error) {
	if path == "" {
		return &charge{}, nil
	}
	r, err := budget.Reserve(path, dataset, command, label, worst)
	if errors.Is(err, budget.ErrExceeded) {
		return nil, usageError{err}
	}
	if err != nil {
		return nil, err
	}
	return &charge{r, worst}, nil
}

// done records what the run spent in its reservation and returns err (the
// run's own error) unless recording fails. An interrupted run stays charged
// at its worst case: when to stop may have followed what the curator saw
// (the training loss on the terminal is not private), so the steps it did
// not take are not refunded.
func (c *charge) done(spent accounting.Ledger, err error) error {
	if c == nil || c.r == nil {
		return err
	}
	if errors.Is(err, context.Canceled) {
		spent = c.worst
	}
	if cerr := c.r.Commit(spent); cerr != nil {
		return errors.Join(err, cerr)
	}
	return err
}

// checkPublicVal refuses a public validation directory that is the private
// training data's directory: scores on it would be free but not public.
func checkPublicVal(publicDir, dataDir, dataset string) error {
	private := dataDir
	if private == "" && dataset == "mnist" {
		private, _ = data.MNISTDir()
	}
	a, err1 := filepath.Abs(publicDir)
	b, err2 := filepath.Abs(private)
	if err1 == nil && err2 == nil && private != "" && a == b {
		return usagef("--public-val-dir %s is the private training data's directory: public validation data must be disjoint from it", publicDir)
	}
	return nil
}

// curatorDir is the directory of curator-only files next to out.
func curatorDir(out string) string { return filepath.Clean(out) + "-curator" }
