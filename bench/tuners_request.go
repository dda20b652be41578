package bench

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// TunersRequest is DP-HyPO's semi-real simulation as a person asks for it
// (the flags of dptune bench tuners, whose names the errors speak): Plan
// checks it and makes the TunersPlan.
type TunersRequest struct {
	// Space names the search space ("": the dataset's DP-HyPO grid), of
	// which every LRStride-th learning rate and ClipStride-th clipping
	// norm are kept.
	Space                string
	LRStride, ClipStride int
	// Epochs, Seeds and BatchSize are the landscape runs'.
	Epochs, Seeds, BatchSize int
	// Epsilon and Delta are each tuning's total budget, at geometric runs
	// of parameter RefGamma; Gammas are the γ of the table, each tuned
	// Repeats times, each visit scored with noise ScoreNoise.
	Epsilon, Delta, RefGamma, ScoreNoise float64
	Gammas                               []float64
	Repeats                              int
	Seed                                 uint64
	// Cache is the landscapes' CSV file ("": Out/landscape-DATASET.csv);
	// Out holds the table and the plot.
	Cache, Out string
}

// TunersPlan is a checked TunersRequest: the data, the subgrid, the
// runs' sampling rate and steps, and each method's noise multiplier for
// the same total budget at the reference γ.
type TunersPlan struct {
	TunersRequest
	Data                  job.Source
	Space                 tuning.Space
	SamplingRate          float64
	Steps                 int
	SigmaGP, SigmaUniform float64
	GP                    tuning.GPOptions
}

// Plan checks r for a simulation on src and calibrates each method's
// noise, before any landscape is built. It refuses, with an error
// wrapping job.ErrInvalid that names the flag at fault: strides, counts and
// a batch size out of range, a bad score noise, geometric γs, ε or δ that
// the tunings cannot take, an unwritable Out.
func (r TunersRequest) Plan(ctx context.Context, src job.Source) (TunersPlan, error) {
	p := TunersPlan{TunersRequest: r, Data: src, GP: tuning.DefaultGPOptions()}
	if err := r.check(src.NominalN); err != nil {
		return p, err
	}
	full, err := job.LoadSpace(r.Space, src.Name)
	if err != nil {
		return p, err
	}
	p.Space = Subgrid(full, map[string]int{tuning.LearningRate: r.LRStride, tuning.ClipNorm: r.ClipStride})
	// Each method's noise, for the same total budget at the reference γ.
	p.SamplingRate = float64(r.BatchSize) / float64(src.NominalN)
	if err := dpsgd.CheckEpochs(r.Epochs, p.SamplingRate); err != nil {
		return p, job.Invalidf("--epochs %d: %v", r.Epochs, err)
	}
	p.Steps = dpsgd.StepsForEpochs(r.Epochs, p.SamplingRate)
	if p.SigmaGP, p.SigmaUniform, err = SimulationNoise(ctx, p.SamplingRate, p.Steps, r.RefGamma, p.GP, r.Epsilon, r.Delta); err != nil {
		return p, job.Invalid(err)
	}
	if err := job.CheckOut(r.Out); err != nil {
		return p, job.Invalidf("--out: %v", err)
	}
	if p.Cache == "" {
		p.Cache = filepath.Join(r.Out, "landscape-"+src.Name+".csv")
	}
	return p, nil
}

// check refuses settings the simulation cannot run, n being the nominal
// training-set size.
func (r TunersRequest) check(n int) error {
	switch {
	case r.LRStride < 1 || r.ClipStride < 1:
		return job.Invalidf("--lr-stride and --clip-stride must be at least 1")
	case r.Epochs < 1 || r.Seeds < 1 || r.Repeats < 1:
		return job.Invalidf("--epochs, --seeds and --repeats must be at least 1")
	case r.BatchSize < 1 || r.BatchSize > n:
		return job.Invalidf("--batch-size %d is outside [1, %d]", r.BatchSize, n)
	case !(r.ScoreNoise >= 0) || math.IsInf(r.ScoreNoise, 1):
		return job.Invalidf("--score-noise %v must be a finite non-negative number", r.ScoreNoise)
	case len(r.Gammas) == 0:
		return job.Invalidf("--gammas needs at least one γ")
	}
	for _, g := range append([]float64{r.RefGamma}, r.Gammas...) {
		if !(g > 0 && g < 1) {
			return job.Invalidf("γ = %v is outside (0, 1)", g)
		}
		// Checked here, before the landscapes are built: each tuning
		// draws K from TNB(1, γ).
		if err := accounting.TNBRepetitions(1, g).CheckSampled(); err != nil {
			return job.Invalidf("γ = %v: %v", g, err)
		}
	}
	if err := accounting.CheckEpsilon(r.Epsilon); err != nil {
		return job.Invalidf("--epsilon: %v", err)
	}
	if err := accounting.CheckDelta(r.Delta); err != nil {
		return job.Invalidf("--delta: %v", err)
	}
	return nil
}

// Landscapes builds the GP tuner's landscape at σ = SigmaGP and the
// uniform tuner's at SigmaUniform, training on train and testing on test
// (the sets the network reads: job.Source.LoadInputs) with run; progress,
// if not nil, gives each landscape's progress callback by its label ("GP
// landscape runs", "uniform landscape runs").
func (p TunersPlan) Landscapes(ctx context.Context, train, test *data.Dataset, run runner.Runner, progress func(label string) func(done, total int)) ([2]Landscape, error) {
	base := LandscapeConfig{Arch: p.Data.Arch, Train: train, Test: test, Space: p.Space, SamplingRate: p.SamplingRate, Epochs: p.Epochs,
		Seeds: p.Seeds, Cache: p.Cache, Runner: run, Jobs: job.LandscapeJobsFor(p.Data, train, test)}
	var ls [2]Landscape
	for k, sigma := range []float64{p.SigmaGP, p.SigmaUniform} {
		c := base
		c.NoiseMultiplier = sigma
		if progress != nil {
			c.Progress = progress([]string{"GP landscape", "uniform landscape"}[k] + " runs")
		}
		var err error
		if ls[k], err = BuildLandscape(ctx, c); err != nil {
			return ls, err
		}
	}
	return ls, nil
}

// Simulate runs both tuners on the landscapes ls (Landscapes'), Repeats
// times at each γ of Gammas (SimulateTuners).
func (p TunersPlan) Simulate(ctx context.Context, ls [2]Landscape, progress func(done, total int)) ([]TunerSimCell, error) {
	return SimulateTuners(ctx, TunerSimConfig{GP: ls[0], Uniform: ls[1], Gammas: p.Gammas, Repeats: p.Repeats,
		ScoreNoise: p.ScoreNoise, GPOptions: p.GP, Seed: p.Seed, Progress: progress})
}

// TunersSitting is what tuners.json says about how the table was made:
// the command, the network and the machine.
type TunersSitting struct {
	Command  string
	Network  string
	CPUs     int
	Load     []string // load average before and after
	Wall     float64  // seconds of this invocation
	Finished string
}

// Best is the best landscape mean of l.
func (l Landscape) Best() float64 {
	b := math.Inf(-1)
	for _, m := range l.Mean {
		b = math.Max(b, m)
	}
	return b
}

// Write writes the table of cells on the landscapes ls into Out:
// tuners.csv, tuners.json (with the plan's settings and the sitting s) and
// the plot tuners.png.
func (p TunersPlan) Write(cells []TunerSimCell, ls [2]Landscape, s TunersSitting) error {
	var b strings.Builder
	cw := csv.NewWriter(&b)
	cw.Write([]string{"gamma", "mean_runs", "gp_accuracy", "gp_stderr", "uniform_accuracy", "uniform_stderr", "gp_minus_uniform", "gp_minus_uniform_stderr"})
	for _, c := range cells {
		cw.Write([]string{strconv.FormatFloat(c.Gamma, 'g', -1, 64), strconv.FormatFloat(c.MeanRuns, 'g', 6, 64),
			strconv.FormatFloat(c.GPAccuracy, 'f', 5, 64), strconv.FormatFloat(c.GPStdErr, 'f', 5, 64),
			strconv.FormatFloat(c.UniformAccuracy, 'f', 5, 64), strconv.FormatFloat(c.UniformStdErr, 'f', 5, 64),
			strconv.FormatFloat(c.Difference, 'f', 5, 64), strconv.FormatFloat(c.DifferenceStdErr, 'f', 5, 64)})
	}
	cw.Flush()
	if err := os.WriteFile(filepath.Join(p.Out, "tuners.csv"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(map[string]any{"dataset": p.Data.Name, "epsilon": p.Epsilon, "delta": p.Delta,
		"gp_noise_multiplier": p.SigmaGP, "uniform_noise_multiplier": p.SigmaUniform, "candidates": ls[0].Space.Size(),
		"landscape_epochs": p.Epochs, "landscape_seeds": p.Seeds, "repeats": p.Repeats, "score_noise": p.ScoreNoise,
		"command": s.Command,
		"network": s.Network, "batch_size": p.BatchSize, "landscape_seconds": ls[0].Seconds + ls[1].Seconds,
		"cpus": s.CPUs, "load_avg": s.Load, "wall_seconds": s.Wall, "finished": s.Finished,
		"cells": cells}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(p.Out, "tuners.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	return PlotTuners(cells, filepath.Join(p.Out, "tuners.png"))
}
