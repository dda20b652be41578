package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
)

// dataFlags are the flags of every command that reads the private data.
type dataFlags struct {
	dataset, dataDir, budget string
	featureCache             string
	model                    string
	nominalSize              int
	mean, std                []float64 // --dataset folder
	noResize                 bool
	shape                    []int
}

func addDataFlags(fl *pflag.FlagSet, d *dataFlags) {
	fl.StringVar(&d.dataset, "dataset", "mnist", "dataset: "+strings.Replace(data.NamesList(), " or ", ", ", 1)+" or folder (an ImageFolder: --data-dir DIR with DIR/train/<class>/* and DIR/test/<class>/*, images in "+job.FolderFormatsHelp()+"; classes and shape from the public test split; needs --nominal-size)")
	fl.Float64SliceVar(&d.mean, "mean", nil, "folder: public per-channel mean of the pixels scaled to [0, 1], subtracted before dividing by --std (default 0; never computed from the images)")
	fl.Float64SliceVar(&d.std, "std", nil, "folder: public per-channel standard deviation the pixels are divided by (default 1)")
	fl.BoolVar(&d.noResize, "no-resize", false, "folder: do not resize (bilinear) an image whose size is not the network's: a training image is left out and counted (curator-side), a test image refused")
	fl.IntSliceVar(&d.shape, "image-shape", nil, "folder: the network's input C,H,W (1 or 3 channels, height, width; default: the shape of the dataset a built-in network was made for, else the first test image's, never a training image's)")
	fl.StringVar(&d.dataDir, "data-dir", "", "directory of the dataset's files (default "+job.DefaultDirHelp()+")")
	fl.IntVar(&d.nominalSize, "nominal-size", 0, "public size of the training set in --data-dir, used for every sampling rate and divisor (default: the dataset's published size, "+job.NominalSizeHelp()+"); the loaded count is never used")
	addModelFlag(fl, &d.model)
	fl.StringVar(&d.budget, "budget", "", "curator's budget file (dptune budget init): the run is refused if it could exceed it, and is recorded in it")
	fl.StringVar(&d.featureCache, "feature-cache", job.DefaultFeatureCache(), "curator directory keeping the features of a network with a scatter front end, computed once per dataset (they are the private data, transformed: created 0700, files 0600); empty: compute them on every run")
}

// source is the job's view of the dataset the flags name: --nominal-size
// (only with --data-dir) overrides the published size.
func (d dataFlags) source(cmd *cobra.Command) (job.Source, error) {
	ch := cmd.Flags().Changed
	if d.dataset == job.FolderName {
		if (d.mean == nil) != (d.std == nil) {
			return job.Source{}, usagef("--mean and --std go together: one value per channel each")
		}
		src, _, err := job.FolderDataset(d.dataDir, d.model, d.nominalSize, job.FolderSettings{Mean: d.mean, Std: d.std, NoResize: d.noResize,
			Shape: d.shape, Progress: folderProgress(cmd.ErrOrStderr())})
		if err != nil {
			return src, err
		}
		src.Features = job.FeatureCache{Dir: d.featureCache, Progress: featureProgress(cmd.ErrOrStderr())}
		return src, nil
	}
	if ch("mean") || ch("std") || ch("no-resize") || ch("image-shape") {
		return job.Source{}, usagef("--mean, --std, --no-resize and --image-shape apply to --dataset folder")
	}
	src, err := job.Dataset(d.dataset, d.dataDir)
	if err != nil {
		return src, err
	}
	if cmd.Flags().Lookup("nominal-size") != nil && cmd.Flags().Changed("nominal-size") {
		if d.dataDir == "" {
			return src, usagef("--nominal-size declares the size of the data in --data-dir; give --data-dir too")
		}
		src = src.WithNominalSize(d.nominalSize)
	}
	src.Features = job.FeatureCache{Dir: d.featureCache, Progress: featureProgress(cmd.ErrOrStderr())}
	return withModel(src, d.model)
}

// folderProgress shows a progress bar while an image folder's split is
// decoded.
func folderProgress(w io.Writer) func(split string, done, total int) {
	return phaseProgress(w, "images")
}

// featureProgress shows a progress bar while a set's front-end features
// are computed.
func featureProgress(w io.Writer) func(set string, done, total int) {
	return phaseProgress(w, "features")
}

// phaseProgress shows one progress bar per named part of a phase ("what
// (part)"), closed when the part is done or the next one starts.
func phaseProgress(w io.Writer, what string) func(part string, done, total int) {
	var b *bar
	var current string
	return func(part string, done, total int) {
		if b == nil || part != current {
			if b != nil {
				b.Close()
			}
			current = part
			b = newPhaseBar(w, total, what+" ("+part+")")
		}
		b.Set(done)
		if done == total {
			b.Close()
			b = nil
		}
	}
}

// addModelFlag adds --model: the network trained.
func addModelFlag(fl *pflag.FlagSet, m *string) {
	var names []string
	for _, s := range model.BuiltinSpecs() {
		names = append(names, s.Name)
	}
	fl.StringVar(m, "model", "", "network: a built-in spec ("+strings.Join(names, ", ")+") or a JSON spec file (default: "+job.DefaultModelHelp()+")")
}

// withModel is src training the network --model names ("" keeps its default).
func withModel(src job.Source, name string) (job.Source, error) {
	if name == "" {
		return src, nil
	}
	spec, err := model.LoadSpec(name)
	if err != nil {
		return src, usageError{err}
	}
	return src.WithModel(spec)
}

// seedFlag is --seed when given, else nil (crypto/rand, secure noise).
func seedFlag(cmd *cobra.Command, seed uint64) *uint64 {
	if cmd.Flags().Changed("seed") {
		return &seed
	}
	return nil
}

// warner prints a job's curator-side warnings on w.
func warner(w io.Writer) func(string) {
	return func(msg string) { fmt.Fprintln(w, "warning:", msg) }
}

// loadSpace loads the search space called name (a builtin or a JSON file);
// an empty name means the dataset's default space.
var loadSpace = job.LoadSpace
