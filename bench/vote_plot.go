package bench

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotVoteReal draws the real-data points of one final-training mode as a
// PNG at path: one panel per setting, accuracy against ε (log scale) for
// Opt, RandGuess and DP-Hype (mean with its 95% interval).
func PlotVoteReal(pts []VoteRealPoint, final, title string, path string) error {
	type key struct {
		setting string
		n       int
		alpha   float64
	}
	var order []key
	by := map[key][]VoteRealPoint{}
	for _, p := range pts {
		if p.FinalTraining != final {
			continue
		}
		k := key{p.Setting, p.Clients, p.Alpha}
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], p)
	}
	if len(order) == 0 {
		return fmt.Errorf("bench: no %s points to plot", final)
	}
	var panels []*plot.Plot
	for _, k := range order {
		p := plot.New()
		if k.setting == "iid" {
			p.Title.Text = fmt.Sprintf("%s: IID, n = %d", title, k.n)
		} else {
			p.Title.Text = fmt.Sprintf("%s: Dirichlet α = %g, n = %d", title, k.alpha, k.n)
		}
		p.X.Label.Text, p.Y.Label.Text = "ε (log scale)", "test accuracy"
		var eps []float64
		for _, q := range by[k] {
			eps = append(eps, q.Epsilon)
		}
		p.X.Scale, p.X.Tick.Marker = plot.LogScale{}, valueTicks(eps)
		p.Y.Min, p.Y.Max = 0, 1
		var opt, guess, hype plotter.XYs
		var errs plotter.YErrors
		for _, q := range by[k] {
			opt = append(opt, plotter.XY{X: q.Epsilon, Y: q.Opt})
			guess = append(guess, plotter.XY{X: q.Epsilon, Y: q.RandGuess})
			hype = append(hype, plotter.XY{X: q.Epsilon, Y: q.DPHype})
			errs = append(errs, struct{ Low, High float64 }{q.CI95, q.CI95})
		}
		addLine(p, opt, 0, false, "Opt")
		addLine(p, guess, 1, false, "RandGuess")
		addLine(p, hype, 2, false, "DP-Hype")
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYer
			plotter.YErrorer
		}{hype, errs})
		if err != nil {
			return err
		}
		eb.Color = plotutil.Color(2)
		p.Add(eb)
		p.Legend.Top, p.Legend.Left = false, false
		panels = append(panels, p)
	}
	rows := rowsOf3(panels)
	return savePanels(rows, vg.Points(float64(300*len(rows[0]))), vg.Points(float64(300*len(rows))), path)
}

// PlotVoteSplits draws each split's examples per client by label (stacked
// bars, DP-Hype's Appendix B figures) as a PNG at path.
func PlotVoteSplits(splits []VoteSplit, path string) error {
	var panels []*plot.Plot
	for _, s := range splits {
		p := plot.New()
		if s.Alpha == 0 {
			p.Title.Text = fmt.Sprintf("IID, n = %d", s.Clients)
		} else {
			p.Title.Text = fmt.Sprintf("Dirichlet α = %g, n = %d", s.Alpha, s.Clients)
		}
		p.X.Label.Text, p.Y.Label.Text = "client (bars: labels 0 at the bottom … 9 on top)", "examples"
		var below *plotter.BarChart
		for label := range s.Counts[0] {
			v := make(plotter.Values, len(s.Counts))
			for c := range s.Counts {
				v[c] = float64(s.Counts[c][label])
			}
			b, err := plotter.NewBarChart(v, vg.Points(max(2, 240/float64(len(v)))))
			if err != nil {
				return err
			}
			b.Color = plotutil.Color(label)
			b.LineStyle.Width = 0
			if below != nil {
				b.StackOn(below)
			}
			below = b
			p.Add(b)
		}
		panels = append(panels, p)
	}
	rows := rowsOf3(panels)
	return savePanels(rows, vg.Points(float64(300*len(rows[0]))), vg.Points(float64(280*len(rows))), path)
}

// rowsOf3 lays panels out three to a row, the last row padded with blanks.
func rowsOf3(panels []*plot.Plot) [][]*plot.Plot {
	var rows [][]*plot.Plot
	for i := 0; i < len(panels); i += 3 {
		row := panels[i:min(i+3, len(panels)):min(i+3, len(panels))]
		for len(row) < 3 && len(panels) > 3 {
			row = append(row, blankPlot())
		}
		rows = append(rows, row)
	}
	return rows
}

func blankPlot() *plot.Plot {
	p := plot.New()
	p.HideAxes()
	p.BackgroundColor = color.White
	return p
}
