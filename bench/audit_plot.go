package bench

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// PlotAudit draws an audit's statistics as a PNG at path: the histogram of
// the adversary's statistic on X and on X′ (finite values only; a tuner that
// released nothing gives −Inf), the threshold the lower bound used, and
// ε_L against the claims in the title.
func PlotAudit(stats0, stats1 []float64, threshold, epsLower float64, claims map[string]float64, path string) error {
	finite := func(s []float64) plotter.Values {
		var v plotter.Values
		for _, x := range s {
			if !math.IsInf(x, 0) && !math.IsNaN(x) {
				v = append(v, x)
			}
		}
		return v
	}
	v0, v1 := finite(stats0), finite(stats1)
	if len(v0) == 0 || len(v1) == 0 {
		return fmt.Errorf("bench: no finite statistics to plot")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("audit: ε_L = %.3f; claimed %s", epsLower, fmtClaims(claims))
	p.X.Label.Text = "adversary's statistic"
	p.Y.Label.Text = "trials"
	for k, v := range []plotter.Values{v0, v1} {
		h, err := plotter.NewHist(v, 60)
		if err != nil {
			return err
		}
		h.FillColor = nil
		h.LineStyle.Color = plotutil.Color(k)
		h.LineStyle.Width = vg.Points(1.2)
		p.Add(h)
		p.Legend.Add([]string{"X (without the canary)", "X′ (with it)"}[k], h)
	}
	if !math.IsInf(threshold, 0) {
		l, err := plotter.NewLine(plotter.XYs{{X: threshold, Y: 0}, {X: threshold, Y: float64(len(v0)) / 10}})
		if err != nil {
			return err
		}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add("threshold", l)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p.Save(vg.Points(620), vg.Points(380), path)
}

func fmtClaims(c map[string]float64) string {
	s := ""
	for _, k := range []string{"rdp", "pld", "basic", "xiang-o"} {
		if v, ok := c[k]; ok {
			s += fmt.Sprintf("%s %.3f ", k, v)
		}
	}
	return s
}
