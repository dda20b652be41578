package job

import (
	"fmt"
	"strings"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/tuning"
)

// Baseline is what a user does instead of tuning: one private run of the
// network's published settings (NetworkDefaultsOn) at the tuning's whole
// (ε, δ), on the whole training set. A tuning is worth running only where
// it beats it at the same total ε; TuneReport.Baseline records it beside
// the selected candidate.
type Baseline struct {
	Network      string  `json:"network"`
	Dataset      string  `json:"dataset"`
	BatchSize    int     `json:"batch_size"`
	Epochs       int     `json:"epochs"`
	LearningRate float64 `json:"learning_rate"`
	Momentum     float64 `json:"momentum"`
	ClipNorm     float64 `json:"clip_norm"`
	// Source says where the settings come from (TrainDefaults.Source).
	Source string `json:"source"`
	// Command is the `dptune train` that runs the baseline.
	Command string `json:"command"`
	// SelectedIsBaseline says whether the tuning selected exactly these
	// settings (nil until it selected).
	SelectedIsBaseline *bool `json:"selected_is_baseline,omitempty"`
}

// Baseline returns the baseline of the tuning s (see Baseline): the
// default settings given (s.Default), else the network's published ones;
// false when there are neither.
func (s TuneSpec) Baseline() (*Baseline, bool) {
	spec := s.Data.Arch.Spec
	d, ok := s.defaultsOf()
	if !ok {
		return nil, false
	}
	data := "--dataset " + s.Data.Name
	if s.Data.folder != nil {
		data = fmt.Sprintf("--dataset %s --data-dir DIR --nominal-size %d", FolderName, s.Data.NominalN)
	} else if s.Data.Dir != "" {
		data += " --data-dir DIR"
	}
	cmd := fmt.Sprintf("dptune train %s --model %s --epsilon %g --delta %g", data, spec.Name, s.Epsilon, s.Delta)
	if own, _ := NetworkDefaultsOn(spec, s.Data.Name); s.Default != nil || d.Source != own.Source {
		// Settings train does not take by itself: given ones, or the
		// published ones standing for settings dptune chose on this data.
		cmd += fmt.Sprintf(" --batch-size %d --epochs %d --lr %g --momentum %g --clip-norm %g", d.BatchSize, d.Epochs, d.LearningRate, d.Momentum, d.ClipNorm)
	}
	return &Baseline{Network: spec.Name, Dataset: s.Data.Name, BatchSize: d.BatchSize, Epochs: d.Epochs, LearningRate: d.LearningRate,
		Momentum: d.Momentum, ClipNorm: d.ClipNorm, Source: d.Source, Command: cmd}, true
}

// isBaseline reports whether the candidate selected (its values by
// dimension, and the labels of its categorical ones) runs the baseline's
// settings: each dimension the space leaves out takes the tuning's own
// value (s.fixed, s.Epochs, s.BatchSize, s.Momentum). Under automatic
// clipping no candidate runs the baseline's flat clipping: false.
func (s TuneSpec) isBaseline(b *Baseline, values map[string]float64, labels map[string]string) bool {
	if s.Clipping == dpsgd.AutomaticClipping {
		return false
	}
	if n, ok := labels[tuning.Network]; ok && strings.TrimSuffix(n, ".json") != b.Network {
		return false
	}
	lr, clip := s.fixed()
	run := map[string]float64{tuning.LearningRate: lr, tuning.ClipNorm: clip, tuning.BatchSize: float64(s.BatchSize),
		tuning.Epochs: float64(s.Epochs), tuning.Momentum: s.Momentum}
	for k, v := range values {
		if _, ok := run[k]; ok {
			run[k] = v
		}
	}
	if _, ok := labels[tuning.LRSchedule]; ok && labels[tuning.LRSchedule] != "constant" {
		return false
	}
	return run[tuning.LearningRate] == b.LearningRate && run[tuning.ClipNorm] == b.ClipNorm && run[tuning.BatchSize] == float64(b.BatchSize) &&
		run[tuning.Epochs] == float64(b.Epochs) && run[tuning.Momentum] == b.Momentum
}
