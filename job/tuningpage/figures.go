package tuningpage

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/dptune/dptune/tuning"
)

var (
	red   = color.RGBA{R: 0xc8, G: 0x1e, B: 0x1e, A: 0xff}
	blue  = color.RGBA{R: 0x1f, G: 0x5f, B: 0xb4, A: 0xff}
	grey  = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff}
	light = color.RGBA{R: 0xe4, G: 0xe4, B: 0xe4, A: 0xff}
	dark  = color.RGBA{R: 0x33, G: 0x33, B: 0x33, A: 0xff}
)

// maxTickLabels is the most labelled ticks an axis of a dimension's values
// gets; the others are unlabelled ticks.
const maxTickLabels = 8

// tickLabel formats a value of a dimension for an axis: whole numbers from
// 1 up in full, others to three significant digits.
func tickLabel(x float64) string {
	if x >= 1 && x == math.Trunc(x) && x < 1e15 {
		return strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// axisOf is how a dimension is drawn on an axis: coordinates (a
// categorical dimension's choices at 0, 1, …), whether the axis is
// logarithmic, and ticks at every value of the dimension and at marks,
// off-grid values to be labelled as well.
type axisOf struct {
	xs    []float64
	log   bool
	ticks plot.ConstantTicks
	lo    float64
	hi    float64
}

func newAxis(d tuning.Dim, marks ...float64) axisOf {
	marks = slices.Compact(slices.Sorted(slices.Values(marks)))
	a := axisOf{xs: slices.Clone(d.Values)}
	if d.Choices != nil {
		for i := range a.xs {
			a.xs[i] = float64(i)
		}
	}
	all := append(slices.Clone(a.xs), marks...)
	a.lo, a.hi = slices.Min(all), slices.Max(all)
	a.log = d.Log && d.Choices == nil && a.lo > 0
	switch {
	case a.log:
		if a.lo == a.hi {
			a.lo, a.hi = a.lo/2, a.hi*2
		} else {
			pad := math.Pow(a.hi/a.lo, 0.08)
			a.lo, a.hi = a.lo/pad, a.hi*pad
		}
	case d.Choices != nil:
		a.lo, a.hi = a.lo-0.5, a.hi+0.5
	case a.lo == a.hi:
		pad := math.Max(math.Abs(a.lo)/2, 0.5)
		a.lo, a.hi = a.lo-pad, a.hi+pad
	default:
		pad := (a.hi - a.lo) * 0.08
		a.lo, a.hi = a.lo-pad, a.hi+pad
	}
	step := (len(a.xs) + maxTickLabels - 1) / maxTickLabels
	for i, x := range a.xs {
		t := plot.Tick{Value: x}
		if i%step == 0 || i == len(a.xs)-1 || slices.Contains(marks, x) {
			t.Label = tickLabel(d.Values[i])
			if d.Choices != nil {
				t.Label = d.Choices[i]
			}
		}
		a.ticks = append(a.ticks, t)
	}
	for _, m := range marks {
		if !slices.Contains(a.xs, m) {
			a.ticks = append(a.ticks, plot.Tick{Value: m, Label: tickLabel(m)})
		}
	}
	return a
}

// apply sets ax to draw a.
func (a axisOf) apply(ax *plot.Axis) {
	ax.Min, ax.Max = a.lo, a.hi
	if a.log {
		ax.Scale = plot.LogScale{}
	}
	ax.Tick.Marker = a.ticks
}

// scatter returns the points xys drawn as glyph g of radius r and colour c.
func scatter(xys plotter.XYs, g draw.GlyphDrawer, r vg.Length, c color.Color) *plotter.Scatter {
	s, err := plotter.NewScatter(xys)
	if err != nil {
		panic(err) // only for non-finite points, which JSON and a checked space never hold (Write recovers)
	}
	s.GlyphStyle = draw.GlyphStyle{Shape: g, Radius: r, Color: c}
	return s
}

// marked adds the selected and default marks at (x, y) to p, each when
// its ok is true.
func marked(p *plot.Plot, sel plotter.XY, selOK bool, def plotter.XY, defOK bool) {
	if defOK {
		p.Add(scatter(plotter.XYs{def}, draw.TriangleGlyph{}, vg.Points(7), blue))
	}
	if selOK {
		p.Add(scatter(plotter.XYs{sel}, draw.CircleGlyph{}, vg.Points(3.5), red),
			ringOf(sel))
	}
}

// ringOf is the red ring drawn around the selected candidate.
func ringOf(at plotter.XY) *plotter.Scatter {
	return scatter(plotter.XYs{at}, draw.RingGlyph{}, vg.Points(7.5), red)
}

// strip is one dimension of the space drawn as a row of its values, the
// selected value and the default's marked.
func strip(d tuning.Dim, sel float64, selOK bool, def float64, defOK bool) *plot.Plot {
	var marks []float64
	if selOK {
		marks = append(marks, sel)
	}
	if defOK {
		marks = append(marks, def)
	}
	a := newAxis(d, marks...)
	p := plot.New()
	a.apply(&p.X)
	p.HideY()
	p.Y.Min, p.Y.Max = -1, 1
	p.X.Label.Text = d.Name
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	line, _ := plotter.NewLine(plotter.XYs{{X: a.lo, Y: 0}, {X: a.hi, Y: 0}})
	line.Color = light
	line.Width = vg.Points(1)
	p.Add(line)
	xys := make(plotter.XYs, len(a.xs))
	for i, x := range a.xs {
		xys[i] = plotter.XY{X: x}
	}
	p.Add(scatter(xys, draw.CircleGlyph{}, vg.Points(2.5), grey))
	marked(p, plotter.XY{X: sel}, selOK, plotter.XY{X: def}, defOK)
	return p
}

// spaceFigures draws the selected candidate within the space: one strip
// per dimension and, when the space varies both the learning rate and the
// clipping norm, the plane of the two.
func spaceFigures(rep *report, sp tuning.Space) ([]figure, error) {
	def := baselineValues(rep.Baseline)
	var rows [][]*plot.Plot
	for _, d := range sp.Dims {
		if len(d.Values) == 0 {
			continue // not a space Space.Check passes
		}
		s, sok := rep.Selected[d.Name]
		b, bok := def(d)
		rows = append(rows, []*plot.Plot{strip(d, s, sok, b, bok)})
	}
	if len(rows) == 0 {
		return nil, nil
	}
	what := "the selected candidate (red ring) on each dimension of the space, among the space's values (grey)"
	if rep.Baseline != nil {
		what += ", and the published default (blue triangle)"
	}
	svg, err := render(rows, vg.Points(520), vg.Points(float64(58*len(rows)+16)), draw.Tiles{PadY: vg.Points(6)})
	if err != nil {
		return nil, err
	}
	figs := []figure{{SVG: svg, Caption: "Where the selection sits: " + what + "."}}
	x, xok := dimNamed(sp, tuning.LearningRate)
	y, yok := dimNamed(sp, tuning.ClipNorm)
	if !xok || !yok || len(x.Values) < 2 || len(y.Values) < 2 {
		return figs, nil
	}
	p := plot.New()
	sx, sxok := rep.Selected[x.Name]
	sy, syok := rep.Selected[y.Name]
	bx, bxok := def(x)
	by, byok := def(y)
	var mx, my []float64
	if sxok && syok {
		mx, my = append(mx, sx), append(my, sy)
	}
	if bxok && byok {
		mx, my = append(mx, bx), append(my, by)
	}
	ax, ay := newAxis(x, mx...), newAxis(y, my...)
	ax.apply(&p.X)
	ay.apply(&p.Y)
	p.X.Label.Text, p.Y.Label.Text = x.Name, y.Name
	var grid plotter.XYs
	for _, u := range ax.xs {
		for _, v := range ay.xs {
			grid = append(grid, plotter.XY{X: u, Y: v})
		}
	}
	p.Add(scatter(grid, draw.CircleGlyph{}, vg.Points(2), grey))
	marked(p, plotter.XY{X: sx, Y: sy}, sxok && syok, plotter.XY{X: bx, Y: by}, bxok && byok)
	svg, err = render([][]*plot.Plot{{p}}, vg.Points(420), vg.Points(300), draw.Tiles{})
	if err != nil {
		return nil, err
	}
	caption := "The learning rate against the clipping norm: every pair of the space (grey) and the selected pair (red ring)"
	if bxok && byok {
		caption += ", with the published default's (blue triangle)"
	}
	return append(figs, figure{SVG: svg, Caption: caption + "."}), nil
}

func dimNamed(sp tuning.Space, name string) (tuning.Dim, bool) {
	for _, d := range sp.Dims {
		if d.Name == name {
			return d, true
		}
	}
	return tuning.Dim{}, false
}

// bars draws labelled horizontal bars: names from top to bottom, each
// bar's length its value and its label at its end; darker marks the bars
// drawn in the darker colour, and full, if above 0, draws a light bar of
// that length behind each (a scale's end).
func bars(names []string, values []float64, labels []string, darker []bool, full float64) (*plot.Plot, error) {
	n := len(names)
	p := plot.New()
	// Bars are drawn bottom to top: reverse so the first name is on top.
	rev := func(v []float64) plotter.Values {
		out := make(plotter.Values, n)
		for i := range v {
			out[n-1-i] = v[i]
		}
		return out
	}
	w := vg.Points(16)
	if full > 0 {
		ones := make([]float64, n)
		for i := range ones {
			ones[i] = full
		}
		bg, err := plotter.NewBarChart(rev(ones), w)
		if err != nil {
			return nil, err
		}
		bg.Horizontal, bg.Color, bg.LineStyle.Width = true, light, 0
		p.Add(bg)
	}
	for _, want := range []bool{false, true} {
		vs := make([]float64, n)
		any := false
		for i := range values {
			if darker[i] == want {
				vs[i], any = values[i], true
			}
		}
		if !any {
			continue
		}
		bc, err := plotter.NewBarChart(rev(vs), w)
		if err != nil {
			return nil, err
		}
		bc.Horizontal, bc.LineStyle.Width = true, 0
		bc.Color = blue
		if want {
			bc.Color = dark
		}
		p.Add(bc)
	}
	xys := make(plotter.XYs, n)
	ls := make([]string, n)
	top := full
	for i, v := range values {
		xys[n-1-i] = plotter.XY{X: v, Y: float64(n - 1 - i)}
		ls[n-1-i] = labels[i]
		top = math.Max(top, v)
	}
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: ls})
	if err != nil {
		return nil, err
	}
	l.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(-4)}
	p.Add(l)
	rnames := make([]string, n)
	for i := range names {
		rnames[n-1-i] = names[i]
	}
	p.NominalY(rnames...)
	p.HideX()
	p.X.Min, p.X.Max = 0, top*1.3
	if top == 0 {
		p.X.Max = 1
	}
	p.Y.Tick.Label.Font.Size = vg.Points(11)
	return p, nil
}

// privacyFigure draws the ε of each ledger component beside the total.
func privacyFigure(rep *report) (figure, error) {
	var names, labels []string
	var values []float64
	var isTotal []bool
	for _, c := range rep.Components {
		names = append(names, c.Name)
		v, l := 0.0, "unbounded"
		if c.Epsilon != nil {
			v, l = *c.Epsilon, "ε = "+fixed4(*c.Epsilon)
		}
		values, labels, isTotal = append(values, v), append(labels, l), append(isTotal, false)
	}
	v, l := 0.0, "unbounded"
	if rep.Epsilon != nil {
		v, l = *rep.Epsilon, "ε = "+fixed4(*rep.Epsilon)
	}
	names, values, labels, isTotal = append(names, "total"), append(values, v), append(labels, l), append(isTotal, true)
	p, err := bars(names, values, labels, isTotal, 0)
	if err != nil {
		return figure{}, err
	}
	svg, err := render([][]*plot.Plot{{p}}, vg.Points(520), vg.Points(float64(30*len(names)+30)), draw.Tiles{})
	if err != nil {
		return figure{}, err
	}
	caption := "The privacy spent at δ = " + strconv.FormatFloat(rep.Delta, 'g', -1, 64) + ": each component of the ledger alone (blue) and the whole release (dark)."
	if len(rep.Components) > 1 {
		caption += " The parts do not add up to the total: the total composes them (RDP) and converts to (ε, δ) once."
	}
	return figure{SVG: svg, Caption: caption}, nil
}

// scoreFigure draws the released scores on a scale from nothing to all
// correct.
func scoreFigure(rep *report) (figure, error) {
	var names, labels []string
	var values []float64
	if s := rep.ValidationScore; s != nil {
		what := "validation score"
		if rep.ValidationCount != nil {
			what = "validation score (noisy)"
		}
		names, values, labels = append(names, what), append(values, *s), append(labels, fixed4(*s))
	}
	if t := rep.TestAccuracy; t != nil {
		names, values, labels = append(names, "test accuracy"), append(values, *t), append(labels, fixed4(*t))
	}
	p, err := bars(names, values, labels, make([]bool, len(names)), 1)
	if err != nil {
		return figure{}, err
	}
	svg, err := render([][]*plot.Plot{{p}}, vg.Points(520), vg.Points(float64(30*len(names)+30)), draw.Tiles{})
	if err != nil {
		return figure{}, err
	}
	return figure{SVG: svg, Caption: "What the release scores, as a fraction of all examples (the light bar is all of them): the selected run's released validation score and the released model's test accuracy, where report.json has them."}, nil
}

// render draws rows of plots, aligned, into one SVG of w × h points,
// returned for inlining in HTML (without the XML prolog).
func render(rows [][]*plot.Plot, w, h vg.Length, t draw.Tiles) (template.HTML, error) {
	c := vgsvg.New(w, h)
	dc := draw.New(c)
	t.Rows, t.Cols = len(rows), len(rows[0])
	t.PadTop, t.PadBottom = t.PadTop+vg.Points(6), t.PadBottom+vg.Points(4)
	t.PadLeft, t.PadRight = t.PadLeft+vg.Points(6), t.PadRight+vg.Points(14)
	if t.PadX == 0 {
		t.PadX = vg.Points(24)
	}
	cs := plot.Align(rows, t, dc)
	for i, row := range rows {
		for j, p := range row {
			p.Draw(cs[i][j])
		}
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", err
	}
	s := b.String()
	i := strings.Index(s, "<svg")
	if i < 0 {
		return "", fmt.Errorf("tuningpage: gonum/plot wrote no <svg> element")
	}
	// Sized by the page's style (scaled down on a narrow screen), and
	// named for a screen reader.
	return template.HTML(s[i:]), nil
}

// fontFace is the @font-face rule of the font the figures were laid out in
// (plot.DefaultFont, Liberation Serif), its TrueType data inline.
func fontFace() (template.CSS, error) {
	f := font.DefaultCache.Lookup(plot.DefaultFont, vg.Points(10))
	if f.Face == nil {
		return "", fmt.Errorf("tuningpage: gonum/plot's default font is not in its cache")
	}
	var raw bytes.Buffer
	if _, err := f.Face.WriteSourceTo(nil, &raw); err != nil {
		return "", fmt.Errorf("tuningpage: the figures' font: %w", err)
	}
	var b strings.Builder
	b.WriteString("@font-face{font-family:\"Liberation Serif\";font-style:normal;font-weight:normal;src:url(data:font/ttf;base64,")
	b.WriteString(base64.StdEncoding.EncodeToString(raw.Bytes()))
	b.WriteString(") format(\"truetype\");}")
	return template.CSS(b.String()), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
