package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
)

// A seeds measurement refuses, before any run, a network without published
// settings on its dataset and networks of two datasets; its report section
// lists each run and the mean with its interval.
func TestSeeds(t *testing.T) {
	mnist := tinySource(600)
	if _, err := Seeds(context.Background(), SeedsConfig{Sources: []job.Source{mnist}, Epsilon: 3, Delta: 1e-5, Seeds: []uint64{1}, Dir: t.TempDir()}); !errors.Is(err, job.ErrInvalid) {
		t.Errorf("tb-mnist on mnist (no published settings): %v", err)
	}
	fashion := mnist
	fashion.Name = "fashion-mnist"
	other, err := mnist.WithModel(model.ScatterLinearMNIST)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Seeds(context.Background(), SeedsConfig{Sources: []job.Source{fashion, other}, Epsilon: 3, Delta: 1e-5, Seeds: []uint64{1}, Dir: t.TempDir()}); !errors.Is(err, job.ErrInvalid) {
		t.Errorf("two datasets: %v", err)
	}
	d, _ := job.NetworkDefaultsOn(model.TBMNIST, "fashion-mnist")
	rep := SeedsReport{Dataset: "fashion-mnist", Epsilon: 3, Delta: 1e-5, Command: "dptune bench seeds", Runs: []SeedsRun{
		{Network: "tb-mnist", Seed: 1, Settings: d, TestAccuracy: 0.8661}, {Network: "tb-mnist", Seed: 2, Settings: d, TestAccuracy: 0.8649}}}
	c := SeedsCell{Network: "tb-mnist", Settings: d, Seeds: 2}
	c.Accuracy, c.CI95 = meanCI95([]float64{0.8661, 0.8649})
	rep.Cells = []SeedsCell{c}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var w strings.Builder
	if _, err := seedsSection(&w, found{"seeds.json", "seeds.json", raw}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Command: `dptune bench seeds`", "| tb-mnist | batch 2048, 40 epochs, η = 4, momentum 0.9, C = 0.1: Tramèr & Boneh", "0.8661 (seed 1), 0.8649 (seed 2)", "0.8655 ± 0.0076"} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("the section lacks %q:\n%s", want, w.String())
		}
	}
}

// The committed flat runs of docs/report/data/seeds-fashion-mnist are
// reused as they are (their cache files name no clipping), and never for
// automatic clipping, whose runs get their own files.
func TestSeedsCommittedFlatRunsReused(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "runs"), os.DirFS(filepath.Join("..", "docs", "report", "data", "seeds-fashion-mnist", "runs"))); err != nil {
		t.Fatal(err)
	}
	var sources []job.Source
	for _, spec := range []model.Spec{model.ScatterGNLinearMNIST, model.ScatterLinearMNIST, model.TBMNIST} {
		src, err := tinySource(600).WithModel(spec)
		if err != nil {
			t.Fatal(err)
		}
		src.Name = "fashion-mnist"
		sources = append(sources, src)
	}
	train := seedsTrain
	defer func() { seedsTrain = train }()
	seedsTrain = func(context.Context, job.TrainSpec) (*job.Release, *job.NotPrivateDiagnostics, error) {
		t.Fatal("a cached flat run trained again")
		return nil, nil, nil
	}
	rep, err := Seeds(context.Background(), SeedsConfig{Sources: sources, Epsilon: 3, Delta: 1e-5, Seeds: []uint64{1, 2, 3}, Dir: dir})
	if err != nil || rep.Cached != 9 || rep.Clipping != "" {
		t.Fatalf("flat: %v, %+v", err, rep)
	}
	d, _ := job.NetworkDefaultsOn(model.ScatterLinearMNIST, "fashion-mnist")
	path := filepath.Join(dir, "runs", "scatter-linear-mnist-eps3-seed1.json")
	if _, ok := readSeedsRun(path, SeedsRun{Network: "scatter-linear-mnist", Seed: 1, Settings: d}, 1e-5); !ok {
		t.Error("the committed flat run is not read back")
	}
	auto := SeedsConfig{Clipping: dpsgd.AutomaticClipping}
	if _, ok := readSeedsRun(path, SeedsRun{Network: "scatter-linear-mnist", Seed: 1, Settings: auto.runSettings(d), Clipping: "automatic", AutoClipGamma: 0.01}, 1e-5); ok {
		t.Error("a flat run stands for an automatic one")
	}
}

// Under automatic clipping every run trains the published settings with
// automatic clipping (γ = 0.01), no clipping norm and η·C, records it in
// its run, its cache file and seeds.json, is cached apart from the flat
// runs, and the report's section says so.
func TestSeedsAutomaticClipping(t *testing.T) {
	src, err := tinySource(600).WithModel(model.ScatterLinearMNIST)
	if err != nil {
		t.Fatal(err)
	}
	src.Name = "fashion-mnist"
	d, _ := job.NetworkDefaultsOn(model.ScatterLinearMNIST, "fashion-mnist")
	train := seedsTrain
	defer func() { seedsTrain = train }()
	var specs []job.TrainSpec
	seedsTrain = func(_ context.Context, s job.TrainSpec) (*job.Release, *job.NotPrivateDiagnostics, error) {
		specs = append(specs, s)
		acc, eps := 0.5, 3.0
		return &job.Release{Epsilon: &eps, Report: &job.TrainReport{TestAccuracy: &acc, NoiseMultiplier: 4}}, nil, nil
	}
	dir := t.TempDir()
	cfg := SeedsConfig{Sources: []job.Source{src}, Epsilon: 3, Delta: 1e-5, Seeds: []uint64{1, 2}, Dir: dir, Clipping: dpsgd.AutomaticClipping}
	rep, err := Seeds(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("%d runs trained", len(specs))
	}
	for _, s := range specs {
		if s.Clipping != dpsgd.AutomaticClipping || s.AutoClipGamma != dpsgd.DefaultAutoClipGamma || s.ClipNorm != 0 || s.LearningRate != d.LearningRate*d.ClipNorm ||
			s.BatchSize != d.BatchSize || s.Epochs != d.Epochs || s.Momentum != d.Momentum {
			t.Errorf("spec %+v", s)
		}
	}
	if rep.Clipping != "automatic" || rep.AutoClipGamma != 0.01 || rep.Runs[0].Clipping != "automatic" || rep.Runs[0].Settings.ClipNorm != 0 {
		t.Errorf("report %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "scatter-linear-mnist-automatic-eps3-seed1.json")); err != nil {
		t.Error(err)
	}
	specs = nil
	if rep, err = Seeds(context.Background(), cfg); err != nil || rep.Cached != 2 || len(specs) != 0 {
		t.Errorf("rerun: %v, %d cached, %d trained", err, rep.Cached, len(specs))
	}
	cfg.Clipping = dpsgd.FlatClipping
	if _, err := Seeds(context.Background(), cfg); err != nil || len(specs) != 2 || specs[0].Clipping != dpsgd.FlatClipping || specs[0].ClipNorm != d.ClipNorm {
		t.Errorf("flat after automatic: %v, %+v", err, specs)
	}
	if err := rep.Save(dir); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "seeds.json"))
	if err != nil {
		t.Fatal(err)
	}
	var w strings.Builder
	if _, err := seedsSection(&w, found{"seeds.json", "seeds.json", raw}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Networks at their published settings with automatic clipping on fashion-mnist", "automatic clipping (γ = 0.01)", fmt.Sprintf("η = %g,", d.LearningRate*d.ClipNorm)} {
		if !strings.Contains(w.String(), want) {
			t.Errorf("the section lacks %q:\n%s", want, w.String())
		}
	}
}

// Given settings stand for every network's published ones (a network
// without any runs), and under automatic clipping take η·C too.
func TestSeedsGivenSettings(t *testing.T) {
	src := tinySource(600) // tb-mnist: no published settings on mnist
	train := seedsTrain
	defer func() { seedsTrain = train }()
	var specs []job.TrainSpec
	seedsTrain = func(_ context.Context, s job.TrainSpec) (*job.Release, *job.NotPrivateDiagnostics, error) {
		specs = append(specs, s)
		acc := 0.5
		return &job.Release{Report: &job.TrainReport{TestAccuracy: &acc}}, nil, nil
	}
	d := job.TrainDefaults{BatchSize: 50, Epochs: 2, LearningRate: 4, Momentum: 0.5, ClipNorm: 0.5, Source: "a test's"}
	rep, err := Seeds(context.Background(), SeedsConfig{Sources: []job.Source{src}, Epsilon: 3, Delta: 1e-5, Seeds: []uint64{1}, Dir: t.TempDir(), Default: &d, Clipping: dpsgd.AutomaticClipping})
	if err != nil || len(specs) != 1 || specs[0].LearningRate != 2 || specs[0].BatchSize != 50 || specs[0].ClipNorm != 0 || rep.Cells[0].Settings.Source != "a test's" {
		t.Errorf("%v, %+v, %+v", err, specs, rep)
	}
	bad := d
	bad.BatchSize = 601
	if _, err := Seeds(context.Background(), SeedsConfig{Sources: []job.Source{src}, Epsilon: 3, Delta: 1e-5, Seeds: []uint64{1}, Dir: t.TempDir(), Default: &bad}); !errors.Is(err, job.ErrInvalid) {
		t.Errorf("batch above n: %v", err)
	}
}
