package bench

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/tuning"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotCompare draws the released model's mean test accuracy against the
// total ε (log scale) for each central tuner, with 95% intervals, and
// DP-Hype's (dashed: another guarantee and split) when present, as a PNG at
// path.
func PlotCompare(rep *CompareReport, path string) error {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("private tuners at one total budget: %s, %s, %d candidates", rep.Settings.Dataset, rep.Settings.Model, rep.Settings.Candidates)
	p.X.Label.Text, p.Y.Label.Text = "total ε (tuning + released model), log scale", "test accuracy of the released model"
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, valueTicks(sortedBudgets(rep.Cells))
	for i, e := range rep.Settings.Entries {
		var xy plotter.XYs
		var errs plotter.YErrors
		for _, c := range rep.Cells {
			if c.Tuner == e.Tuner && c.Variant == e.Variant {
				xy = append(xy, plotter.XY{X: c.Budget, Y: c.Accuracy})
				errs = append(errs, struct{ Low, High float64 }{c.CI95, c.CI95})
			}
		}
		if err := addErrorLine(p, xy, errs, i, false, e.Name()); err != nil {
			return err
		}
	}
	if rep.Settings.Default != nil {
		var xy plotter.XYs
		var errs plotter.YErrors
		for _, c := range rep.Cells {
			if c.Tuner == BaselineDefault {
				xy = append(xy, plotter.XY{X: c.Budget, Y: c.Accuracy})
				errs = append(errs, struct{ Low, High float64 }{c.CI95, c.CI95})
			}
		}
		if err := addErrorLine(p, xy, errs, len(rep.Settings.Entries)+1, true, "default: one run of published settings"); err != nil {
			return err
		}
	}
	if len(rep.Vote) > 0 {
		var xy plotter.XYs
		var errs plotter.YErrors
		for _, c := range rep.Vote {
			xy = append(xy, plotter.XY{X: c.Budget, Y: c.Accuracy})
			errs = append(errs, struct{ Low, High float64 }{c.CI95, c.CI95})
		}
		if err := addErrorLine(p, xy, errs, len(rep.Settings.Entries), true, "vote (client-level, own split)"); err != nil {
			return err
		}
	}
	p.Legend.Top, p.Legend.Left = false, false
	p.Add(plotter.NewGrid())
	return savePlot(p, vg.Points(620), vg.Points(420), path)
}

// PlotVersus draws each private tuner's test accuracy less the default's,
// paired by seed, with its 95% interval, at every budget (log scale, every
// budget labelled; the tuners drawn side by side around it), over a line
// at 0, as a PNG at path. It draws nothing without baselines.
func PlotVersus(rep *CompareReport, path string) error {
	if len(rep.Versus) == 0 {
		return nil
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s: private tuner − default (one run of published settings)", rep.Settings.Dataset)
	p.X.Label.Text, p.Y.Label.Text = "total ε (log scale)", "test accuracy difference, paired by seed (95% interval)"
	budgets := sortedBudgets(rep.Cells)
	p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, valueTicks(budgets)
	p.X.Min, p.X.Max = budgets[0]/1.3, budgets[len(budgets)-1]*1.3
	zero, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: 0}, {X: p.X.Max, Y: 0}})
	if err != nil {
		return err
	}
	zero.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	p.Add(zero)
	entries := rep.Settings.Entries
	for i, e := range entries {
		var xy plotter.XYs
		var errs plotter.YErrors
		shift := 1 + 0.04*(float64(i)-float64(len(entries)-1)/2)
		for _, v := range rep.Versus {
			if v.Tuner == e.Tuner && v.Variant == e.Variant {
				xy = append(xy, plotter.XY{X: v.Budget * shift, Y: v.Mean})
				errs = append(errs, struct{ Low, High float64 }{v.CI95, v.CI95})
			}
		}
		if err := addErrorLine(p, xy, errs, i, false, e.Name()); err != nil {
			return err
		}
	}
	p.Legend.Top, p.Legend.Left = false, false
	p.Add(plotter.NewGrid())
	return savePlot(p, vg.Points(620), vg.Points(420), path)
}

// addErrorLine adds a line with points and vertical error bars.
func addErrorLine(p *plot.Plot, xy plotter.XYs, errs plotter.YErrors, i int, dashed bool, name string) error {
	if len(xy) == 0 {
		return nil
	}
	l, sc, err := plotter.NewLinePoints(xy)
	if err != nil {
		return err
	}
	l.Color, sc.Color = plotutil.Color(i), plotutil.Color(i)
	sc.Shape = plotutil.Shape(i)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{xy, errs})
	if err != nil {
		return err
	}
	eb.Color = plotutil.Color(i)
	p.Add(l, sc, eb)
	p.Legend.Add(name, l, sc)
	return nil
}

// WriteCompareMarkdown writes rep's tables: test accuracy per tuner and
// total ε (each row starts with the tuner's `dptune tune --tuner` name),
// then each cell's accounting and cost, then DP-Hype's own table.
func WriteCompareMarkdown(w io.Writer, rep *CompareReport) {
	budgets := sortedBudgets(rep.Cells)
	head := func(first string) {
		fmt.Fprintf(w, "| %s |", first)
		for _, b := range budgets {
			fmt.Fprintf(w, " ε = %g |", b)
		}
		fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(budgets)))
	}
	s := rep.Settings
	runs := fmt.Sprintf("%d epoch(s) per run, batch %d", s.Epochs, s.BatchSize)
	if tuning.RunsVary(tuning.Space{Dims: s.SpaceDims}) {
		runs = "batch size and epochs per candidate (each run counted as the costliest)"
	}
	fmt.Fprintf(w, "Test accuracy of the released model (mean ± 95%% interval over %d seed(s); no interval from one seed) at total (ε, δ = %g) of tuning and release, %s (%s, n = %d), %d candidates of %s, %s:\n\n",
		len(s.Seeds), s.Delta, s.Dataset, s.Model, s.NominalSize, s.Candidates, s.Space, runs)
	if o := s.Options(); o != "" {
		fmt.Fprintf(w, "Comparison-wide options, given to every tuner: %s.%s\n\n", o, wideNote(s))
	}
	if u := s.TrainSubset; u != nil && u.Dev {
		fmt.Fprintf(w, "A development comparison: every run trained on the training examples whose hash keyed with %d falls in the first %.4g of the range (about n = %d), and every \"test accuracy\" below is on the rest of the training set; the real test set was not read.\n\n", u.Key, u.Fraction, s.NominalSize)
	} else if u != nil {
		fmt.Fprintf(w, "Every run trained on a fixed subset of the training set: each example kept when its hash keyed with %d falls in the first %.4g of the range (about n = %d examples).\n\n", u.Key, u.Fraction, s.NominalSize)
	}
	head("tuner")
	entries := s.Entries
	if s.Default != nil {
		entries = append(slices.Clone(BaselineEntries), entries...)
	}
	for _, e := range entries {
		fmt.Fprintf(w, "| %s |", s.entryLabel(e))
		for _, b := range budgets {
			if c, ok := rep.cell(e.Tuner, e.Variant, b); ok {
				fmt.Fprintf(w, " %s |", meanWithCI(c.Accuracy, c.CI95, c.Seeds))
			} else if x, ok := rep.infeasibleAt(e, b); ok && x.Refused {
				fmt.Fprint(w, " not run |")
			} else if ok {
				fmt.Fprint(w, " infeasible |")
			} else {
				fmt.Fprint(w, " – |")
			}
		}
		fmt.Fprintln(w)
	}
	if d := s.Default; d != nil {
		fmt.Fprintf(w, "\n\"default\" is what a user does instead of tuning: one private run at the whole (ε, δ) on the whole training set (it needs no validation split) of batch %d, %d epochs, %s, momentum %g, %s: %s. The two rows marked *not private* train every candidate privately at the whole ε on the tuners' training split: \"non-private selection\" releases the best on the clean validation split with one run's ε (what most papers report), \"oracle\" the best test accuracy; neither selection is counted.\n",
			d.BatchSize, d.Epochs, s.defaultRate(*d), d.Momentum, s.defaultClipping(*d), d.Source)
		for _, c := range rep.Cells {
			if c.Tuner == BaselineSelection && c.Seeds < len(s.Seeds) {
				fmt.Fprintf(w, "The two not-private rows ran on the first %d of the %d seeds (each trains every candidate at every budget).\n", c.Seeds, len(s.Seeds))
				break
			}
		}
		writeVersus(w, rep, budgets)
	}
	var refused []string
	for _, x := range rep.Infeasible {
		if x.Refused && !slices.Contains(refused, x.Reason) {
			refused = append(refused, x.Reason)
		}
	}
	if len(refused) < len(rep.Infeasible) {
		fmt.Fprintln(w, "\n\"infeasible\": no noise multiplier brings the tuner's whole pipeline within the budget (its fixed costs — the scores, the adaptive sampler's overhead, the search — alone exceed it).")
	}
	if len(refused) > 0 {
		fmt.Fprintf(w, "\n\"not run\": the tuner refuses a comparison-wide option (%s).\n", strings.Join(refused, "; "))
	}
	if rep.VoteNotRun != "" {
		fmt.Fprintf(w, "\nDP-Hype was not run: %s.\n", rep.VoteNotRun)
	}
	fmt.Fprintf(w, "\nAccounting and cost per tuning (means over seeds). ε by RDP is the calibrated, proved total; PLD where it counts every event; xiang-o is Xiang et al.'s Algorithm 3, an APPROXIMATION of random-stop's DP-SGD runs and selection only. Runs, epochs and seconds are the curator's (they reveal K).\n\n")
	fmt.Fprintln(w, "| tuner | ε | ε (rdp) | ε (pld) | ε (xiang-o, approx.) | σ per run | runs | training epochs | seconds |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for _, e := range entries {
		for _, b := range budgets {
			c, ok := rep.cell(e.Tuner, e.Variant, b)
			if !ok {
				continue
			}
			secs := fmt.Sprintf("%.0f", c.Seconds)
			if c.Seconds == 0 {
				secs = "– (part scores reused from a smaller budget)"
			}
			fmt.Fprintf(w, "| %s | %g | %.3f | %s | %s | %.3f | %.1f | %.1f | %s |\n", s.entryLabel(e), b, c.EpsilonRDP, optional(c.EpsilonPLD), optional(c.EpsilonXiang),
				c.Noise, c.Runs, c.TrainingEpochs, secs)
		}
	}
	fmt.Fprintln(w)
	writeCostTable(w, rep)
	if len(rep.Vote) > 0 {
		fmt.Fprintf(w, "\nDP-Hype (its own table: the vote's ε/2 is client-level, on a split of the training data among %d clients; the winner is trained by DP-SGD federated averaging at example-level ε/2). Mean ± 95%% interval over seeds of the mean over %d votes:\n\n", rep.Vote[0].Clients, rep.Vote[0].Reps)
		fmt.Fprint(w, "| tuner |")
		for _, c := range rep.Vote {
			fmt.Fprintf(w, " ε = %g |", c.Budget)
		}
		fmt.Fprintf(w, "\n|---|%s\n| vote |", strings.Repeat("---|", len(rep.Vote)))
		for _, c := range rep.Vote {
			fmt.Fprintf(w, " %s |", meanWithCI(c.Accuracy, c.CI95, c.Seeds))
		}
		fmt.Fprint(w, "\n| best candidate (Opt) |")
		for _, c := range rep.Vote {
			fmt.Fprintf(w, " %.4f |", c.Opt)
		}
		fmt.Fprint(w, "\n| mean candidate (RandGuess) |")
		for _, c := range rep.Vote {
			fmt.Fprintf(w, " %.4f |", c.RandGuess)
		}
		fmt.Fprintln(w)
	}
}

func optional(x float64) string {
	if x == 0 {
		return "–"
	}
	return fmt.Sprintf("%.3f", x)
}

// cell is the entry's cell at budget b, if it ran.
func (rep *CompareReport) cell(tuner, variant string, b float64) (CompareCell, bool) {
	for _, c := range rep.Cells {
		if c.Tuner == tuner && c.Variant == variant && c.Budget == b {
			return c, true
		}
	}
	return CompareCell{}, false
}

// infeasible reports whether entry e could not meet budget b, or was not
// run at it (its tuner refuses a comparison-wide option).
func (rep *CompareReport) infeasible(e CompareEntry, b float64) bool {
	_, ok := rep.infeasibleAt(e, b)
	return ok
}

// infeasibleAt is entry e's CompareInfeasible at budget b, if any.
func (rep *CompareReport) infeasibleAt(e CompareEntry, b float64) (CompareInfeasible, bool) {
	for _, x := range rep.Infeasible {
		if x.Tuner == e.Tuner && x.Variant == e.Variant && x.Budget == b {
			return x, true
		}
	}
	return CompareInfeasible{}, false
}

// wideNote explains s's comparison-wide options after their names.
func wideNote(s CompareSettings) string {
	var notes []string
	if s.Clipping != "" {
		notes = append(notes, "automatic clipping (Bu et al. 2023, AUTO-S) has no clipping norm: every run's learning rate that stands for η at C is η·C")
	}
	if d := s.DefaultCandidate; d != nil {
		notes = append(notes, fmt.Sprintf("the default among the candidates is batch %d, %d epochs, %s, momentum %g, %s (%s), every run counted as the costliest of the space's and the default's", d.BatchSize, d.Epochs, s.defaultRate(*d), d.Momentum, s.defaultClipping(*d), d.Source))
	}
	if s.SelectionShare != 0 {
		notes = append(notes, fmt.Sprintf("with a selection share s = %g the selection releases only the chosen settings, and one final run of them on the whole training set, calibrated alone to (1 − s)·ε, is the released model", s.SelectionShare))
	}
	if len(notes) == 0 {
		return ""
	}
	return " " + strings.ToUpper(notes[0][:1]) + notes[0][1:] + strings.Join(append([]string{""}, notes[1:]...), "; ") + "."
}

// defaultRate is default settings d's learning rate as the comparison's
// runs take it: "η = 8", or under automatic clipping "η = 0.8 (η·C: the
// published η = 8 at C = 0.1)".
func (s CompareSettings) defaultRate(d job.TrainDefaults) string {
	if s.Clipping != "" {
		return fmt.Sprintf("η = %g (η·C: the published η = %g at C = %g)", d.LearningRate*d.ClipNorm, d.LearningRate, d.ClipNorm)
	}
	return fmt.Sprintf("η = %g", d.LearningRate)
}

// defaultClipping is default settings d's clipping as the comparison's
// runs take it: "C = 0.1", or "automatic clipping (γ = 0.01)".
func (s CompareSettings) defaultClipping(d job.TrainDefaults) string {
	if s.Clipping != "" {
		return fmt.Sprintf("%s clipping (γ = %g)", s.Clipping, s.AutoClipGamma)
	}
	return fmt.Sprintf("C = %g", d.ClipNorm)
}

// meanWithCI is "mean ± half-width", or the mean alone from one seed (no
// interval).
func meanWithCI(mean, ci95 float64, seeds int) string {
	if seeds < 2 {
		return fmt.Sprintf("%.4f", mean)
	}
	return fmt.Sprintf("%.4f ± %.4f", mean, ci95)
}

// entryLabel is an entry's row label in a comparison with settings s
// (baselineLabel), the default's naming automatic clipping when its run
// clipped so.
func (s CompareSettings) entryLabel(e CompareEntry) string {
	if s.Clipping != "" && e.IsBaseline() && e.Tuner == BaselineDefault {
		return e.Name() + " (one run of published settings, " + s.Clipping + " clipping: η·C)"
	}
	return baselineLabel(e)
}

// baselineLabel is an entry's row label, with the baselines that are not
// private marked so.
func baselineLabel(e CompareEntry) string {
	switch {
	case e.Tuner == BaselineSelection || e.Tuner == BaselineOracle:
		return e.Name() + " (*not private*)"
	case e.IsBaseline():
		return e.Name() + " (one run of published settings)"
	}
	return e.Name()
}

// writeVersus writes each private tuner's paired difference to the
// default per budget, with its verdict.
func writeVersus(w io.Writer, rep *CompareReport, budgets []float64) {
	if len(rep.Versus) == 0 {
		return
	}
	fmt.Fprintf(w, "\nEach private tuner against the default: its test accuracy less the default's, paired by seed (mean ± 95%% Student-t interval), and the verdict: *%s* (the interval above 0), *%s* (below 0), *%s*.\n\n", VerdictPays, VerdictCosts, VerdictUnresolved)
	fmt.Fprint(w, "| tuner |")
	for _, b := range budgets {
		fmt.Fprintf(w, " ε = %g |", b)
	}
	fmt.Fprintf(w, "\n|---|%s\n", strings.Repeat("---|", len(budgets)))
	for _, e := range rep.Settings.Entries {
		fmt.Fprintf(w, "| %s |", e.Name())
		for _, b := range budgets {
			i := slices.IndexFunc(rep.Versus, func(v CompareVersus) bool { return v.Tuner == e.Tuner && v.Variant == e.Variant && v.Budget == b })
			if i < 0 {
				fmt.Fprint(w, " – |")
				continue
			}
			v := rep.Versus[i]
			fmt.Fprintf(w, " %s: %s |", signedWithCI(v.Mean, v.CI95, v.Seeds), v.Verdict)
		}
		fmt.Fprintln(w)
	}
}

// signedWithCI is a difference "+0.0123 ± 0.0045", or alone from one seed.
func signedWithCI(mean, ci95 float64, seeds int) string {
	if seeds < 2 {
		return fmt.Sprintf("%+.4f", mean)
	}
	return fmt.Sprintf("%+.4f ± %.4f", mean, ci95)
}
