package bench

import (
	"fmt"
	"image/color"
	"os"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// PlotPerSample draws rep as a PNG at path: on the left, DP-SGD's time per
// step split by phase, one stacked bar per batch size; on the right,
// examples per second against batch size for both modes.
func PlotPerSample(rep PerSampleReport, path string) error {
	if len(rep.Results) == 0 {
		return fmt.Errorf("bench: nothing to plot")
	}
	phases := []string{"sampling", "forward", "backward", "per_sample", "clip", "noise", "update"}
	bars := plot.New()
	bars.Title.Text = "DP-SGD step by phase"
	bars.Y.Label.Text = "ms per step"
	bars.X.Label.Text = "expected batch size"
	names := make([]string, len(rep.Results))
	for i, r := range rep.Results {
		names[i] = strconv.Itoa(r.BatchSize)
	}
	var below *plotter.BarChart
	for k, ph := range phases {
		vals := make(plotter.Values, len(rep.Results))
		for i, r := range rep.Results {
			vals[i] = r.DP.Phases[ph]
		}
		bc, err := plotter.NewBarChart(vals, vg.Points(18))
		if err != nil {
			return err
		}
		bc.Color = plotutil.Color(k)
		bc.LineStyle.Width = 0
		if below != nil {
			bc.StackOn(below)
		}
		below = bc
		bars.Add(bc)
		bars.Legend.Add(ph, bc)
	}
	bars.Legend.Top = true
	bars.Legend.Left = true
	bars.NominalX(names...)

	tput := plot.New()
	tput.Title.Text = "Throughput"
	tput.X.Label.Text = "expected batch size"
	tput.Y.Label.Text = "examples per second"
	for k, mode := range []string{"non-private", "DP-SGD"} {
		pts := make(plotter.XYs, len(rep.Results))
		for i, r := range rep.Results {
			m := r.NonPrivate
			if k == 1 {
				m = r.DP
			}
			pts[i] = plotter.XY{X: float64(r.BatchSize), Y: m.ExamplesPerSecond}
		}
		l, p, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, p.Color = plotutil.Color(k), plotutil.Color(k)
		if k == 1 {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		tput.Add(l, p)
		tput.Legend.Add(mode, l, p)
	}
	tput.Y.Min = 0
	tput.Legend.Top = false
	tput.Add(plotter.NewGrid())

	return savePair(bars, tput, path)
}

// savePair draws two plots side by side into a PNG at path.
func savePair(left, right *plot.Plot, path string) error {
	return savePanels([][]*plot.Plot{{left, right}}, vg.Points(900), vg.Points(380), path)
}

// valueTicks labels every one of xs on an axis (a log axis's LogTicks
// label the powers of ten alone: an axis of ε = 1, 2, 4, 8 showed "1").
func valueTicks(xs []float64) plot.Ticker {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	xs = slices.Compact(xs)
	ticks := make(plot.ConstantTicks, len(xs))
	for i, x := range xs {
		l := strconv.FormatFloat(x, 'g', 3, 64)
		if strings.ContainsRune(l, 'e') && x >= 1 {
			l = strconv.FormatFloat(x, 'f', 0, 64)
		}
		ticks[i] = plot.Tick{Value: x, Label: l}
	}
	return ticks
}

// fitTitle shrinks p's title font until the title fits width w, less a
// margin, so that no title is cut at its image's edge.
func fitTitle(p *plot.Plot, w vg.Length) {
	const minSize = 7
	for p.Title.Text != "" && p.Title.TextStyle.Width(p.Title.Text) > w-vg.Points(12) && p.Title.TextStyle.Font.Size > vg.Points(minSize) {
		p.Title.TextStyle.Font.Size -= vg.Points(0.5)
	}
}

// titleFits reports whether p's title fits width w (fitTitle's margin).
func titleFits(p *plot.Plot, w vg.Length) bool {
	return p.Title.TextStyle.Width(p.Title.Text) <= w-vg.Points(12)
}

// savePlot saves p as a w × h PNG at path, its title fitted to w.
func savePlot(p *plot.Plot, w, h vg.Length, path string) error {
	fitTitle(p, w)
	return p.Save(w, h, path)
}

// savePanels draws a grid of plots (rows of equal length) into a w × h PNG
// at path, each title fitted to its panel's width.
func savePanels(rows [][]*plot.Plot, w, h vg.Length, path string) error {
	for _, row := range rows {
		for _, p := range row {
			fitTitle(p, (w-vg.Points(20))/vg.Length(len(row))-vg.Points(20))
		}
	}
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: len(rows), Cols: len(rows[0]), PadX: vg.Points(20), PadY: vg.Points(20), PadTop: vg.Points(10), PadBottom: vg.Points(10), PadLeft: vg.Points(10), PadRight: vg.Points(10)}
	canvases := plot.Align(rows, tiles, dc)
	for i, row := range rows {
		for j, p := range row {
			p.Draw(canvases[i][j])
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// PlotTuners draws the simulation's mean accuracy of the selected candidate
// against the mean number of runs 1/γ, for GP and uniform, as a PNG at path.
func PlotTuners(cells []TunerSimCell, path string) error {
	if len(cells) == 0 {
		return fmt.Errorf("bench: nothing to plot")
	}
	p := plot.New()
	p.Title.Text = "DP-HyPO simulation on real landscapes (geometric K)"
	p.X.Label.Text = "mean number of runs 1/γ"
	p.Y.Label.Text = "accuracy of the selected candidate"
	p.X.Scale = plot.LogScale{}
	runs := make([]float64, len(cells))
	for i, c := range cells {
		runs[i] = c.MeanRuns
	}
	p.X.Tick.Marker = valueTicks(runs)
	for k, name := range []string{"GP", "Uniform"} {
		pts := make(plotter.XYs, len(cells))
		errs := make(plotter.YErrors, len(cells))
		for i, c := range cells {
			y, se := c.GPAccuracy, c.GPStdErr
			if k == 1 {
				y, se = c.UniformAccuracy, c.UniformStdErr
			}
			pts[i] = plotter.XY{X: c.MeanRuns, Y: y}
			errs[i] = struct{ Low, High float64 }{se, se}
		}
		l, s, err := plotter.NewLinePoints(pts)
		if err != nil {
			return err
		}
		l.Color, s.Color = plotutil.Color(k), plotutil.Color(k)
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{pts, errs})
		if err != nil {
			return err
		}
		eb.Color = plotutil.Color(k)
		p.Add(l, s, eb)
		p.Legend.Add(name, l, s)
	}
	p.Legend.Top = false
	p.Add(plotter.NewGrid())
	return savePlot(p, vg.Points(560), vg.Points(380), path)
}
