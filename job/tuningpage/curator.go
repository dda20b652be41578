package tuningpage

import (
	"bytes"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// curatorView is the NOT PRIVATE page's template data.
type curatorView struct {
	Report      *report
	Space       tuning.Space
	Font, Style template.CSS
	ReleasePage string
	Candidates  int
	Runs        int
	Dist        string
	Distinct    int
	Failed      int
	Best        string
	Figures     []figure
	Dims        []string
	Rows        []runRow
}

// runRow is one run in the page's table.
type runRow struct {
	Run    int
	Values []string
	Score  string
	Note   string
}

// curatorPage renders the NOT PRIVATE page of every run in runs, with rep
// and sp for what was selected and where; releasePage is the release's
// page, named on this one.
func curatorPage(rep *report, sp tuning.Space, runs []tuning.RunRecord, releasePage string) ([]byte, error) {
	v := curatorView{Report: rep, Space: sp, Style: style, ReleasePage: releasePage, Candidates: sp.Size(), Runs: len(runs)}
	var err error
	if v.Font, err = fontFace(); err != nil {
		return nil, err
	}
	if r := rep.Repetitions; r != nil && r.Distribution != accounting.Fixed {
		v.Dist = r.String()
	}
	for _, d := range sp.Dims {
		v.Dims = append(v.Dims, d.Name)
	}
	seen := map[int]bool{}
	best := math.Inf(-1)
	for _, r := range runs {
		for _, k := range sortedKeys(r.Candidate.Values) {
			if !slices.Contains(v.Dims, k) {
				v.Dims = append(v.Dims, k)
			}
		}
		seen[r.Candidate.Index] = true
		if r.Failed {
			v.Failed++
		} else {
			best = math.Max(best, r.Score)
		}
	}
	v.Distinct = len(seen)
	if !math.IsInf(best, -1) {
		v.Best = fixed4(best)
	}
	for i, r := range runs {
		row := runRow{Run: i + 1, Score: fixed4(r.Score), Note: runNote(rep, sp, r)}
		if r.Failed {
			row.Score = "—"
		}
		for _, name := range v.Dims {
			x, ok := r.Candidate.Values[name]
			switch d, isDim := dimNamed(sp, name); {
			case !ok:
				row.Values = append(row.Values, "—")
			case isDim:
				row.Values = append(row.Values, valueLabel(d, x, r.Candidate.Labels[name]))
			default:
				row.Values = append(row.Values, short(x))
			}
		}
		v.Rows = append(v.Rows, row)
	}
	if len(runs) > 0 {
		if v.Figures, err = runFigures(rep, sp, runs); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	if err := curatorTemplate.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("tuningpage: %w", err)
	}
	return b.Bytes(), nil
}

// runNote says what a run was: the default, the released selection's
// candidate, failed.
func runNote(rep *report, sp tuning.Space, r tuning.RunRecord) string {
	var n []string
	if r.Candidate.Index == sp.Size() {
		n = append(n, "the default")
	}
	if isSelected(rep, r.Candidate) {
		n = append(n, "the selected candidate")
	}
	if r.Failed {
		n = append(n, "failed (diverged)")
	}
	return strings.Join(n, "; ")
}

// isSelected reports whether c runs the settings report.json released as
// selected.
func isSelected(rep *report, c tuning.Candidate) bool {
	if rep.Selected == nil || len(c.Values) == 0 {
		return false
	}
	for k, x := range c.Values {
		if s, ok := rep.Selected[k]; !ok || s != x {
			return false
		}
	}
	return true
}

// runFigures draws every run's score in the order run, and against each
// dimension of the space the runs varied.
func runFigures(rep *report, sp tuning.Space, runs []tuning.RunRecord) ([]figure, error) {
	order, ymin, ymax, err := orderFigure(rep, sp, runs)
	if err != nil {
		return nil, err
	}
	figs := []figure{order}
	var panels []*plot.Plot
	for _, d := range sp.Dims {
		if p := dimensionPanel(d, sp, runs, ymin, ymax); p != nil {
			panels = append(panels, p)
		}
	}
	if len(panels) == 0 {
		return figs, nil
	}
	var rows [][]*plot.Plot
	for i := 0; i < len(panels); i += 2 {
		row := []*plot.Plot{panels[i]}
		if i+1 < len(panels) {
			row = append(row, panels[i+1])
		} else if len(panels) > 1 {
			row = append(row, emptyPlot())
		}
		rows = append(rows, row)
	}
	w := vg.Points(520)
	if len(rows[0]) == 1 {
		w = vg.Points(300)
	}
	svg, err := render(rows, w, vg.Points(float64(210*len(rows))), draw.Tiles{PadY: vg.Points(16)})
	if err != nil {
		return nil, err
	}
	return append(figs, figure{SVG: svg, Caption: "NOT PRIVATE: every run's score against each dimension the space varies (grey dots; the default's runs as blue triangles)."}), nil
}

// orderFigure draws every run's score in the order run: the selected
// candidate's runs in red, the default's as blue triangles, failed runs as
// red crosses at the bottom. ymin and ymax are its score axis's range,
// which the panels of the dimensions share.
func orderFigure(rep *report, sp tuning.Space, runs []tuning.RunRecord) (fig figure, ymin, ymax float64, err error) {
	order := plot.New()
	order.X.Label.Text = "run (in the order made)"
	order.Y.Label.Text = "validation score"
	var all, sel, def, failed plotter.XYs
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, r := range runs {
		x := float64(i + 1)
		if r.Failed {
			failed = append(failed, plotter.XY{X: x})
			continue
		}
		pt := plotter.XY{X: x, Y: r.Score}
		lo, hi = math.Min(lo, r.Score), math.Max(hi, r.Score)
		all = append(all, pt)
		if isSelected(rep, r.Candidate) {
			sel = append(sel, pt)
		}
		if r.Candidate.Index == sp.Size() {
			def = append(def, pt)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	for i := range failed {
		failed[i].Y = lo
	}
	if len(all) > 1 {
		l, err := plotter.NewLine(all)
		if err != nil {
			return fig, 0, 0, err
		}
		l.Color, l.Width = light, vg.Points(1.5)
		order.Add(l)
	}
	if len(all) > 0 {
		order.Add(scatter(all, draw.CircleGlyph{}, vg.Points(3), grey))
	}
	if len(def) > 0 {
		order.Add(scatter(def, draw.TriangleGlyph{}, vg.Points(6), blue))
	}
	for _, p := range sel {
		order.Add(scatter(plotter.XYs{p}, draw.CircleGlyph{}, vg.Points(3.5), red), ringOf(p))
	}
	if len(failed) > 0 {
		order.Add(scatter(failed, draw.CrossGlyph{}, vg.Points(5), red))
	}
	order.X.Min, order.X.Max = 0.5, float64(len(runs))+0.5
	order.X.Tick.Marker = runTicks(len(runs))
	pad := math.Max((hi-lo)*0.1, 0.01)
	order.Y.Min, order.Y.Max = lo-pad, hi+pad
	order.Add(plotter.NewGrid())
	svg, err := render([][]*plot.Plot{{order}}, vg.Points(520), vg.Points(280), draw.Tiles{})
	if err != nil {
		return fig, 0, 0, err
	}
	fig = figure{SVG: svg, Caption: "NOT PRIVATE: every run's validation score in the order the runs were made (grey), the runs of the selected candidate in red, the default's runs as blue triangles, failed runs as red crosses at the bottom."}
	return fig, lo - pad, hi + pad, nil
}

// dimensionPanel draws every finished run's score against dimension d of
// sp, on a score axis from ymin to ymax (grey dots; the default's runs as
// blue triangles); nil when d does not vary, no run has a value of it, or
// a default's value cannot stand on its logarithmic axis.
func dimensionPanel(d tuning.Dim, sp tuning.Space, runs []tuning.RunRecord, ymin, ymax float64) *plot.Plot {
	if len(d.Values) < 2 {
		return nil
	}
	var pts, dpts plotter.XYs
	var marks []float64
	for _, r := range runs {
		x, ok := r.Candidate.Values[d.Name]
		if !ok || r.Failed {
			continue
		}
		if r.Candidate.Index == sp.Size() {
			if d.Choices != nil {
				continue // the default's categorical settings are not indices of d
			}
			dpts = append(dpts, plotter.XY{X: x, Y: r.Score})
			marks = append(marks, x)
			continue
		}
		pts = append(pts, plotter.XY{X: x, Y: r.Score})
	}
	if len(pts)+len(dpts) == 0 {
		return nil
	}
	a := newAxis(d, marks...)
	if a.log && slices.ContainsFunc(marks, func(m float64) bool { return m <= 0 }) {
		return nil
	}
	p := plot.New()
	a.apply(&p.X)
	p.X.Label.Text = d.Name
	p.Y.Label.Text = "score"
	p.Y.Min, p.Y.Max = ymin, ymax
	p.Add(plotter.NewGrid())
	if len(pts) > 0 {
		p.Add(scatter(pts, draw.CircleGlyph{}, vg.Points(3), grey))
	}
	if len(dpts) > 0 {
		p.Add(scatter(dpts, draw.TriangleGlyph{}, vg.Points(6), blue))
	}
	return p
}

// emptyPlot fills the last tile of an odd row of panels.
func emptyPlot() *plot.Plot {
	p := plot.New()
	p.HideAxes()
	return p
}

// runTicks labels runs 1 … k at a round step that gives at most ten
// labels.
func runTicks(k int) plot.ConstantTicks {
	step := 1
	for _, s := range []int{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000} {
		step = s
		if k/s <= 10 {
			break
		}
	}
	var t plot.ConstantTicks
	for i := 1; i <= k; i++ {
		if i == 1 || i%step == 0 {
			t = append(t, plot.Tick{Value: float64(i), Label: strconv.Itoa(i)})
		}
	}
	return t
}
