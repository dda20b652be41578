package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/dptune/dptune/audit"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// AuditTables are the audits beside the published ones (bench audit's
// tables, in audit-figures.json): the tight DP-SGD audit, Xiang et al.'s
// Table 3 (ETCV, Dirac canary), every tuner in the worst case, and a
// one-run audit of a real training run.
type AuditTables struct {
	// TightDPSGD: the worst-case DP-SGD game (Nasr et al. 2023), τ = 1,
	// all iterates, at ε = 2, 4, 8 claimed by RDP.
	TightDPSGD []TightDPSGDRow `json:"tight_dpsgd"`
	// Table3: ETCV with the Dirac canary, the reduced game at μ = 1/σ,
	// K ∼ TNB(η = 0, γ = 0.01), at ε_B = 1, 2, 4.
	Table3 []Table3Row `json:"table3_etcv"`
	// Tuners: each tuner's audit in the worst case.
	Tuners []TunerAuditRow `json:"tuners"`
	// OneRun: Steinke et al.'s one-run audit of make run's training (nil
	// when the data was not at hand).
	OneRun *OneRunRow `json:"one_run,omitempty"`
	Trials struct {
		DPSGD, Reduced, Tuner int
	} `json:"trials"`
	Steps int `json:"dpsgd_steps"`
}

// TightDPSGDRow is one tight DP-SGD audit.
type TightDPSGDRow struct {
	Epsilon     float64 `json:"epsilon_rdp"` // the claim σ is calibrated to, by RDP
	EpsilonPLD  float64 `json:"epsilon_pld"` // the exact ε of the run (PLD)
	Lower       float64 `json:"epsilon_lower"`
	GDPEstimate float64 `json:"epsilon_gdp_estimate"` // an estimate, not a bound
	Seconds     float64 `json:"seconds"`
}

// Table3Row is one ε_B of Xiang et al.'s Table 3, ETCV column (λ_a).
type Table3Row struct {
	BaseEpsilon float64 `json:"base_epsilon"`
	Mu          float64 `json:"mu"`
	Published   float64 `json:"published"`
	Lower       float64 `json:"epsilon_lower"`
	UpperO      float64 `json:"epsilon_upper_o"` // Algorithm 3: an upper bound for this game
	UpperP      float64 `json:"epsilon_upper_p"` // Papernot–Steinke
	Seconds     float64 `json:"seconds"`
}

// TunerAuditRow is one tuner's audit: at per-run ε_B (random-stop, GP,
// grid) or per-iteration ϵ₀ (doubling's capped AboveThreshold).
type TunerAuditRow struct {
	Tuner   string             `json:"tuner"`
	Setting string             `json:"setting"` // "ε_B = 2" or "ϵ₀ = 0.5"
	Lower   float64            `json:"epsilon_lower"`
	Upper   map[string]float64 `json:"epsilon_upper"`
	Trials  int                `json:"trials"`
	Seconds float64            `json:"seconds"`
}

// OneRunRow is a one-run audit of a real run.
type OneRunRow struct {
	Command  string  `json:"command"`
	Canary   string  `json:"canary"`
	Canaries int     `json:"canaries"`
	Lower    float64 `json:"epsilon_lower"`
	Epsilon  float64 `json:"epsilon"`
	Accuracy float64 `json:"test_accuracy"`
	Seconds  float64 `json:"seconds"`
}

// xiangTable3 is Xiang et al.'s Table 3, ETCV column, proxy λ_a.
var xiangTable3 = map[float64]float64{1: 1.17, 2: 2.36, 4: 4.28}

// tightEpsilons are the claims of the tight DP-SGD audit.
var tightEpsilons = []float64{2, 4, 8}

// RunAuditTables measures AuditTables with c's trial counts (DPSGDTrials
// for the DP-SGD and tuner audits, Trials for the reduced game) and steps
// (τ = 1), reporting each audit through c.Progress. oneRun, if not
// nil, is the training run of the one-run audit.
func RunAuditTables(ctx context.Context, c AuditFigureConfig, oneRun *job.OneRunSpec) (*AuditTables, error) {
	const delta = 1e-5
	t := &AuditTables{Steps: c.DPSGDSteps}
	t.Trials.DPSGD, t.Trials.Reduced, t.Trials.Tuner = c.DPSGDTrials, c.Trials, c.DPSGDTrials
	progress := func(s string) {
		if c.Progress != nil {
			c.Progress(s)
		}
	}
	play := func(s job.AuditSpec) (*job.AuditResult, float64, error) {
		s.Seed, s.Delta = c.Seed, delta
		start := time.Now()
		r, err := job.Audit(ctx, s)
		return r, time.Since(start).Seconds(), err
	}
	for _, eps := range tightEpsilons {
		progress(fmt.Sprintf("tight DP-SGD audit: ε = %g", eps))
		r, sec, err := play(job.AuditSpec{Protocol: job.AuditDPSGD, Trials: c.DPSGDTrials, BaseEpsilon: eps, SamplingRate: 1, ClipNorm: 1,
			Steps: c.DPSGDSteps, Size: 1, Observe: audit.ObserveAll})
		if err != nil {
			return t, err
		}
		row := TightDPSGDRow{Epsilon: r.EpsilonUpper["rdp"], EpsilonPLD: r.EpsilonUpper["pld"], Lower: r.EpsilonLower, Seconds: sec}
		if r.EpsilonGDPEstimate != nil {
			row.GDPEstimate = *r.EpsilonGDPEstimate
		}
		t.TightDPSGD = append(t.TightDPSGD, row)
	}
	tnb := accounting.TNBRepetitions(0, 0.01)
	for _, eb := range []float64{1, 2, 4} {
		progress(fmt.Sprintf("Table 3, ETCV: ε_B = %g", eb))
		// One run at τ = 1 is the Gaussian mechanism: T steps at σ are
		// one step at σ/√T, so μ = 1/σ₁ for the σ₁ that RDP calibrates
		// one step to ε_B.
		sigma, err := accounting.CalibrateNoise(ctx, accounting.RDP{}, func(z float64) accounting.Event { return accounting.DPSGD(z, 1, 1) }, eb, delta)
		if err != nil {
			return t, err
		}
		r, sec, err := play(job.AuditSpec{Protocol: job.AuditReduced, Trials: c.Trials, Mu: 1 / sigma, Repetitions: tnb})
		if err != nil {
			return t, err
		}
		t.Table3 = append(t.Table3, Table3Row{BaseEpsilon: eb, Mu: 1 / sigma, Published: xiangTable3[eb], Lower: r.EpsilonLower,
			UpperO: r.EpsilonUpper["xiang-o"], UpperP: r.EpsilonUpper["rdp"], Seconds: sec})
	}
	for _, tu := range []struct{ name, protocol string }{{"random-stop", job.AuditTuner}, {"GP (DP-HyPO)", job.AuditGP}, {"grid (4 candidates)", job.AuditGrid}} {
		for _, eb := range []float64{1, 2, 4} {
			progress(fmt.Sprintf("%s in the worst case: ε_B = %g", tu.name, eb))
			s := job.AuditSpec{Protocol: tu.protocol, Trials: c.DPSGDTrials, BaseEpsilon: eb, SamplingRate: 1, ClipNorm: 1, Steps: c.DPSGDSteps, Size: 1}
			if tu.protocol != job.AuditGrid {
				s.Repetitions = tnb
			}
			if tu.protocol == job.AuditGP {
				s.GPOptions = tuning.DefaultGPOptions()
			}
			r, sec, err := play(s)
			if err != nil {
				return t, err
			}
			t.Tuners = append(t.Tuners, TunerAuditRow{Tuner: tu.name, Setting: fmt.Sprintf("ε_B = %g", eb), Lower: r.EpsilonLower,
				Upper: r.EpsilonUpper, Trials: r.Trials, Seconds: sec})
		}
	}
	for _, e0 := range []float64{0.1, 0.5, 1} {
		progress(fmt.Sprintf("doubling's capped AboveThreshold in the worst case: ϵ₀ = %g", e0))
		s := job.AuditSpec{Protocol: job.AuditAboveThreshold, Trials: c.DPSGDTrials}
		s.AboveThreshold.Partitions, s.AboveThreshold.Epsilon0, s.AboveThreshold.Granularity = 10, e0, 0.01
		s.AboveThreshold.MaxIterations = tuning.DefaultMaxIterations(0, 0.01)
		r, sec, err := play(s)
		if err != nil {
			return t, err
		}
		t.Tuners = append(t.Tuners, TunerAuditRow{Tuner: "doubling (capped AboveThreshold, k = 10, g = 0.01)", Setting: fmt.Sprintf("ϵ₀ = %g", e0),
			Lower: r.EpsilonLower, Upper: r.EpsilonUpper, Trials: r.Trials, Seconds: sec})
	}
	if oneRun != nil {
		progress("one-run audit of make run's training")
		start := time.Now()
		r, err := job.AuditOneRun(ctx, *oneRun)
		if err != nil {
			return t, err
		}
		row := &OneRunRow{Command: fmt.Sprintf("dptune audit one-run --dataset %s --model %s --epsilon %g --canaries %d", oneRun.Train.Data.Name,
			oneRun.Train.Data.Arch.Name, oneRun.Train.Epsilon, oneRun.Canaries), Canary: r.Canary, Canaries: r.Canaries, Lower: r.EpsilonLower,
			Seconds: time.Since(start).Seconds()}
		if r.Run.Epsilon != nil {
			row.Epsilon = *r.Run.Epsilon
		}
		if r.Run.TestAccuracy != nil {
			row.Accuracy = *r.Run.TestAccuracy
		}
		t.OneRun = row
	}
	return t, nil
}

// MakeRunOneRun is the one-run audit of make run's training
// (scatter-linear-mnist at ε = 3 with its own settings), white-box, 1000
// canaries, on src (the MNIST source, features cached as train caches
// them).
func MakeRunOneRun(src job.Source, seed uint64) (*job.OneRunSpec, error) {
	src, err := src.WithModel(model.ScatterLinearMNIST)
	if err != nil {
		return nil, err
	}
	d, _ := job.NetworkDefaults(model.ScatterLinearMNIST)
	return &job.OneRunSpec{Train: job.TrainSpec{Data: src, Epsilon: 3, Delta: 1e-5, ClipNorm: d.ClipNorm, BatchSize: d.BatchSize, Epochs: d.Epochs,
		LearningRate: d.LearningRate, Momentum: d.Momentum, Seed: &seed}, Canaries: 1000, Confidence: 0.95, Canary: job.OneRunGradient}, nil
}
