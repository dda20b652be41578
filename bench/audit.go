package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/dptune/dptune/audit"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
)

// AuditFigureConfig says what AuditFigures measures.
type AuditFigureConfig struct {
	Out          string
	Trials       int       // trials of each reduced-game audit (the paper: 10⁶)
	DPSGDTrials  int       // trials of each DP-SGD audit
	DPSGDSteps   int       // steps of each audited DP-SGD run (τ = 1)
	BaseEpsilons []float64 // ε_B on the horizontal axis
	Seed         uint64
	// OneRun, if not nil, is the training run the one-run audit audits
	// (MakeRunOneRun).
	OneRun   *job.OneRunSpec
	Progress func(what string)
}

// Figure 6's settings: DP-SGD steps N and δ; its sampling rates τ.
const (
	figure6Steps = 500
	figure6Delta = 1e-5
)

var figure6Taus = []float64{1, 0.1}

// Check returns an error for settings AuditFigures cannot finish, before
// any work: trial counts outside [4, audit.MaxTrials], DP-SGD steps outside
// [1, dpsgd.MaxSteps], no ε_B, and any ε_B that is not positive and finite,
// that no noise multiplier meets (by RDP, for Figure 6's runs or the DP-SGD
// audit's), or whose reduced-game μ (eq. 19 or the GDP central limit
// theorem) is above accounting.MaxGaussianSelectMu. The calibrations take
// milliseconds; ctx's error is returned when it is cancelled.
func (c AuditFigureConfig) Check(ctx context.Context) error {
	switch {
	case c.Trials < 4 || c.Trials > audit.MaxTrials:
		return fmt.Errorf("reduced-game trials %d are outside [4, %d]", c.Trials, audit.MaxTrials)
	case c.DPSGDTrials < 4 || c.DPSGDTrials > audit.MaxTrials:
		return fmt.Errorf("DP-SGD trials %d are outside [4, %d]", c.DPSGDTrials, audit.MaxTrials)
	case c.DPSGDSteps < 1 || c.DPSGDSteps > dpsgd.MaxSteps:
		return fmt.Errorf("DP-SGD steps %d are outside [1, %d]", c.DPSGDSteps, dpsgd.MaxSteps)
	case len(c.BaseEpsilons) == 0:
		return fmt.Errorf("no base ε_B to audit at")
	}
	calibrate := func(eb, tau float64, steps int) (float64, error) {
		sigma, err := accounting.CalibrateNoise(ctx, accounting.RDP{}, func(z float64) accounting.Event { return accounting.DPSGD(z, tau, steps) }, eb, figure6Delta)
		if err != nil {
			return 0, fmt.Errorf("ε_B = %v with τ = %g and %d steps: %w", eb, tau, steps, err)
		}
		return sigma, nil
	}
	for _, eb := range c.BaseEpsilons {
		if err := accounting.CheckEpsilon(eb); err != nil {
			return fmt.Errorf("base epsilon: %w", err)
		}
		for _, tau := range figure6Taus {
			sigma, err := calibrate(eb, tau, figure6Steps)
			if err != nil {
				return err
			}
			for _, mu := range []float64{accounting.XiangMu(tau, sigma, figure6Steps), accounting.GDPMuUniform(tau, sigma, figure6Steps)} {
				if !(mu <= accounting.MaxGaussianSelectMu) {
					return fmt.Errorf("ε_B = %v with τ = %g: the reduced game's μ = %.4g is above %d, where Algorithm 3 is not computed", eb, tau, mu, accounting.MaxGaussianSelectMu)
				}
			}
		}
		if _, err := calibrate(eb, 1, c.DPSGDSteps); err != nil {
			return err
		}
	}
	return nil
}

// AuditPoint is one point of Figure 6: at base budget ε_B, the generic bound
// ε_U-P (Papernot & Steinke), Algorithm 3 with the GDP μ (ε_U-G) and with
// eq. 19's μ (ε_U-O), and the reduced game's audited ε_L.
type AuditPoint struct {
	BaseEpsilon float64 `json:"base_epsilon"`
	UpperP      float64 `json:"epsilon_upper_p"`
	UpperG      float64 `json:"epsilon_upper_g"`
	UpperO      float64 `json:"epsilon_upper_o"`
	Lower       float64 `json:"epsilon_lower"`
	Seconds     float64 `json:"audit_seconds"`
}

// AuditPanel is one panel of Figure 6: a sampling rate τ and a distribution
// of the number of runs.
type AuditPanel struct {
	Tau         float64                `json:"tau"`
	Repetitions accounting.Repetitions `json:"repetitions"`
	Points      []AuditPoint           `json:"points"`
}

// AuditFigures reproduces, at a scale that fits a 2-core machine, Xiang et
// al.'s Figure 6 — for τ ∈ {1, 0.1} and two TNB distributions of K (mean 10,
// η = 1 geometric and η = 0 logarithmic), N = 500 steps, δ = 10⁻⁵, against
// ε_B — and the audit tables beside the published ones (RunAuditTables,
// with c.OneRun's training run when set). It writes audit-figures.json and
// one PNG per panel to Out.
func AuditFigures(ctx context.Context, c AuditFigureConfig) ([]AuditPanel, *AuditTables, error) {
	const steps, delta = 500, 1e-5
	start := time.Now()
	geo, err := accounting.TNBWithMean(1, 10)
	if err != nil {
		return nil, nil, err
	}
	lg, err := accounting.TNBWithMean(0, 10)
	if err != nil {
		return nil, nil, err
	}
	progress := func(s string) {
		if c.Progress != nil {
			c.Progress(s)
		}
	}
	var panels []AuditPanel
	for _, tau := range figure6Taus {
		for _, rep := range []accounting.Repetitions{geo, lg} {
			panel := AuditPanel{Tau: tau, Repetitions: rep}
			for _, eb := range c.BaseEpsilons {
				progress(fmt.Sprintf("figure 6: τ = %g, %s, ε_B = %g", tau, rep, eb))
				pt := AuditPoint{BaseEpsilon: eb}
				for _, v := range []struct {
					acc string
					out *float64
				}{{"xiang-g", &pt.UpperG}, {"xiang-o", &pt.UpperO}} {
					res, err := job.Account(ctx, job.AccountSpec{Solve: "epsilon", Accountant: v.acc, BaseEpsilon: eb, SamplingRate: tau,
						Steps: steps, Delta: delta, Repetitions: &rep})
					if err != nil {
						return panels, nil, err
					}
					*v.out = *res.Epsilon
					if v.acc == "xiang-o" {
						pt.UpperP = *res.GenericEpsilon
						start := time.Now()
						a, err := job.Audit(ctx, job.AuditSpec{Protocol: job.AuditReduced, Trials: c.Trials, Seed: c.Seed, Delta: delta,
							Mu: res.Mu, Repetitions: rep})
						if err != nil {
							return panels, nil, err
						}
						pt.Lower, pt.Seconds = a.EpsilonLower, time.Since(start).Seconds()
					}
				}
				panel.Points = append(panel.Points, pt)
			}
			panels = append(panels, panel)
			if err := plotAuditPanel(panel, filepath.Join(c.Out, fmt.Sprintf("figure6-tau%g-eta%g.png", tau, rep.Eta))); err != nil {
				return panels, nil, err
			}
		}
	}
	load := []string{LoadAvg()}
	tables, err := RunAuditTables(ctx, c, c.OneRun)
	if err != nil {
		return panels, tables, err
	}
	js, err := json.MarshalIndent(map[string]any{"figure6": panels, "tables": tables, "steps": steps, "delta": delta,
		"reduced_trials": c.Trials, "dpsgd_trials": c.DPSGDTrials, "dpsgd_steps": c.DPSGDSteps, "cpus": runtime.NumCPU(),
		"load_avg": append(load, LoadAvg()), "wall_seconds": time.Since(start).Seconds(), "finished": time.Now().UTC().Format(time.RFC3339)}, "", "  ")
	if err != nil {
		return panels, tables, err
	}
	return panels, tables, os.WriteFile(filepath.Join(c.Out, "audit-figures.json"), append(js, '\n'), 0o644)
}

// plotAuditPanel draws one panel of Figure 6.
func plotAuditPanel(p AuditPanel, path string) error {
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("random-stop tuning of DP-SGD (N = 500, δ = 1e-5): τ = %g, K ~ %s", p.Tau, p.Repetitions)
	pl.X.Label.Text = "ε_B of one run"
	pl.Y.Label.Text = "ε of the tuning"
	for k, s := range []struct {
		name string
		get  func(AuditPoint) float64
	}{{"ε_U-P (Papernot–Steinke)", func(a AuditPoint) float64 { return a.UpperP }},
		{"ε_U-G (Algorithm 3, GDP μ)", func(a AuditPoint) float64 { return a.UpperG }},
		{"ε_U-O (Algorithm 3, eq. 19 μ)", func(a AuditPoint) float64 { return a.UpperO }},
		{"ε_L (audit of the reduced game)", func(a AuditPoint) float64 { return a.Lower }}} {
		pts := make(plotter.XYs, len(p.Points))
		for i, a := range p.Points {
			pts[i] = plotter.XY{X: a.BaseEpsilon, Y: s.get(a)}
		}
		l, sc, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, sc.Color = plotutil.Color(k), plotutil.Color(k)
		sc.Shape = plotutil.Shape(k)
		pl.Add(l, sc)
		pl.Legend.Add(s.name, l, sc)
	}
	pl.Legend.Top, pl.Legend.Left = true, true
	pl.Add(plotter.NewGrid())
	return pl.Save(vg.Points(560), vg.Points(380), path)
}
