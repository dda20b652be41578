package main

import (
	"fmt"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// datasetInfo is what the tool knows about a dataset before loading it.
type datasetInfo struct {
	arch   model.Arch
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

// loadDataset reads the dataset from dir; for MNIST an empty dir means the
// GoMNIST module's files in the Go module cache.
func loadDataset(name string, d datasetInfo, dir string) (train, test *data.Dataset, err error) {
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
	return train, test, nil
}

// loadSpace loads the search space called name (a builtin or a JSON file);
// an empty name means the dataset's DP-HyPO grid.
func loadSpace(name, dataset string) (tuning.Space, error) {
	if name == "" {
		name = map[string]string{"mnist": "mnist-dphypo", "cifar10": "cifar10-dphypo"}[dataset]
	}
	return tuning.LoadSpace(name)
}
