package bench

import (
	"context"
	"encoding/json"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/tuning"
)

// testReport writes a report over real outputs made here: the doubling
// figures, a comparison with its baselines assembled from rows (and the
// unpaired plot `bench compare` draws beside it), a cost sitting
// (costFixture), DP-Hype's simulation-only output and a real-data one
// that also holds the simulation's figures, into an out directory that
// holds a stale figure of an earlier report.
func testReport(t *testing.T) (string, *ReportSummary) {
	t.Helper()
	in, out := t.TempDir(), t.TempDir()
	if _, err := DoublingFigures(context.Background(), filepath.Join(in, "doubling"), 2, 2); err != nil {
		t.Fatal(err)
	}
	entries := []CompareEntry{{Tuner: "grid"}, {Tuner: "randomstop", Variant: "tnb"}}
	var rows []CompareRow
	for s := uint64(1); s <= 3; s++ {
		jitter := 0.002 * float64(int(s)-2) // the default's seeds differ from the tuners'
		for _, b := range []float64{1, 8} {
			rows = append(rows, CompareRow{Tuner: "grid", Budget: b, Seed: s, TestAccuracy: 0.5 + 0.04*b + 0.01*float64(s), Released: true, EpsilonRDP: b},
				CompareRow{Tuner: "randomstop", Variant: "tnb", Budget: b, Seed: s, TestAccuracy: 0.7 + 0.03*b + 0.01*float64(s), Released: true, EpsilonRDP: b},
				CompareRow{Tuner: BaselineDefault, Budget: b, Seed: s, TestAccuracy: 0.75 + 0.02*b + 0.01*float64(s) + jitter, Released: true, EpsilonRDP: b},
				CompareRow{Tuner: BaselineSelection, Budget: b, Seed: s, TestAccuracy: 0.9, Released: true, EpsilonRDP: b},
				CompareRow{Tuner: BaselineOracle, Budget: b, Seed: s, TestAccuracy: 0.95, Released: true, EpsilonRDP: b})
		}
	}
	all := append(slices.Clone(BaselineEntries), entries...)
	rep := &CompareReport{Settings: CompareSettings{Dataset: "mnist", Model: "tb-mnist", Entries: entries, Budgets: []float64{1, 8}, Seeds: []uint64{1, 2, 3}, Delta: 1e-5,
		Default: &job.TrainDefaults{BatchSize: 256, Epochs: 10, LearningRate: 1, ClipNorm: 1, Source: "a test's"}},
		Rows: rows, Cells: compareCells(all, []float64{1, 8}, rows), CPUs: 2}
	rep.Versus = rep.versusDefault(all, []float64{1, 8})
	dir := filepath.Join(in, "compare")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rep.Save(dir); err != nil {
		t.Fatal(err)
	}
	if err := PlotCompare(rep, filepath.Join(dir, "compare-mnist.png")); err != nil {
		t.Fatal(err)
	}
	cost := filepath.Join(in, "cost-mnist")
	if err := os.MkdirAll(cost, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := costFixture().Save(cost); err != nil {
		t.Fatal(err)
	}
	// DP-Hype: the simulation alone, and a real-data run beside its own
	// copy of the simulation's figures.
	pt := func(eps, hype float64) VoteRealPoint {
		return VoteRealPoint{Setting: "iid", Clients: 10, FinalTraining: "non-private", Epsilon: eps, Opt: 0.9, RandGuess: 0.4, DPHype: hype, CI95: 0.01}
	}
	for name, v := range map[string]any{
		"vote-sim":   map[string]any{"simulation": []VoteSimPoint{{Figure: "2a", Epsilon: 1, VotesPerClient: 1, LossStddev: 0.25, Success: 0.95}}, "cpus": 2},
		"vote-mnist": map[string]any{"real": []VoteRealPoint{pt(1, 0.8), pt(2, 0.85), pt(8, 0.9)}, "real_config": map[string]any{"dataset": "mnist", "model": "tb-mnist"}, "cpus": 2},
	} {
		d := filepath.Join(in, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		if err := os.WriteFile(filepath.Join(d, "vote.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, fig := range []string{"figure2a.png", "figure2b.png"} {
			if err := os.WriteFile(filepath.Join(d, fig), []byte("png"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(out, "figures"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, stale := range []string{"00-compare-mnist.png", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(out, "figures", stale), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := WriteReport(ReportConfig{Inputs: []string{in}, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	return out, sum
}

// costFixture is a cost sitting's compare.json: the baselines and two
// tuners at ε = 4 on one seed, the grid row reused from a cache written
// before CPU seconds were recorded, the doubling row with its part runs
// and final run apart.
func costFixture() *CompareReport {
	f := func(x float64) *float64 { return &x }
	sel := map[string]float64{tuning.Epochs: 10}
	rep := &CompareReport{CostSitting: true, CPUs: 2, LoadAvg: []string{"0.05 0.10 0.20", "1.95 1.90 1.60"}, Wall: 1234, Finished: "2026-12-01T10:00:00Z",
		Command: "dptune bench compare --cost-sitting",
		Settings: CompareSettings{Dataset: "mnist", Model: "scatter-gn-linear-mnist", NominalSize: 60000, Space: "s", Candidates: 16, Budgets: []float64{4}, Seeds: []uint64{1}, Delta: 1e-5, Epochs: 1,
			Entries: []CompareEntry{{Tuner: "grid"}, {Tuner: tuning.DoublingName}}, Default: &job.TrainDefaults{BatchSize: 4096, Epochs: 40, LearningRate: 8, ClipNorm: 0.1, Source: "a test's"}},
		Rows: []CompareRow{
			{Tuner: BaselineDefault, Budget: 4, Seed: 1, Runs: 1, TrainingEpochs: 40, Seconds: 8, CPUSeconds: f(15.5)},
			{Tuner: BaselineSelection, Budget: 4, Seed: 1, Runs: 16, TrainingEpochs: 240, Seconds: 43, CPUSeconds: f(84)},
			{Tuner: BaselineOracle, Budget: 4, Seed: 1, Runs: 16, TrainingEpochs: 240, Seconds: 43, CPUSeconds: f(84)},
			{Tuner: "grid", Budget: 4, Seed: 1, Runs: 16, TrainingEpochs: 240, Seconds: 155},
			{Tuner: tuning.DoublingName, Budget: 4, Seed: 1, Runs: 8001, TrainingEpochs: 490, Selected: sel, Seconds: 760, CPUSeconds: f(1500),
				PartSeconds: f(700), PartCPUSeconds: f(1390), FinalSeconds: f(60), FinalCPUSeconds: f(110)},
		}}
	rep.Settings.Doubling.Partitions, rep.Settings.Doubling.PartEpochs = 500, 30
	rep.Cells = compareCells(append(slices.Clone(BaselineEntries), rep.Settings.Entries...), []float64{4}, rep.Rows)
	return rep
}

// The report holds every section; its comparison table's rows start with
// the tuner names; its figures are the paired differences to the default
// (not the unpaired accuracies), Figure 3 drawn again, DP-Hype's
// simulation once and the real run's figure drawn from its vote.json,
// and nothing an earlier report wrote; the verdicts follow from the
// numbers: random-stop is 0.2 − 0.01·ε ahead of grid with no spread
// between the seeds' offsets, so ahead beyond the interval at both
// budgets.
func TestReportSectionsAndVerdicts(t *testing.T) {
	out, sum := testReport(t)
	if want := []string{"compare.json", "compare.json", "doubling.json", "vote.json", "vote.json"}; !slices.Equal(sum.Sections, want) {
		t.Fatalf("sections %v, want %v", sum.Sections, want)
	}
	count := func(suffix string) int {
		n := 0
		for _, f := range sum.Figures {
			if strings.HasSuffix(f, suffix) {
				n++
			}
		}
		return n
	}
	for suffix, want := range map[string]int{"-versus-default-mnist.png": 1, "-compare-mnist.png": 0, "-figure2a.png": 1, "-figure2b.png": 1,
		"-figure1.png": 1, "-figure3.png": 1, "-figure4.png": 1, "-vote_mnist.png": 1} {
		if n := count(suffix); n != want {
			t.Errorf("%d figures *%s, want %d (figures %v)", n, suffix, want, sum.Figures)
		}
	}
	on, err := filepath.Glob(filepath.Join(out, "figures", "*"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range on {
		names = append(names, filepath.Base(p))
	}
	if want := append(slices.Clone(sum.Figures), "notes.txt"); !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(want))) {
		t.Errorf("figures/ holds %v, want the report's %v and the file it does not own", names, want)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n| grid |", "\n| randomstop (tnb) |", "-versus-default-mnist.png)", "-figure3.png)", "## " + costSittingTitle} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if strings.Contains(string(md), "compare-mnist.png") {
		t.Error("report.md shows the unpaired comparison plot")
	}
	outcomes := map[string]string{}
	for _, v := range sum.Verdicts {
		outcomes[v.Paper+" "+v.Result[:10]] = v.Outcome
	}
	if o := outcomes["Papernot & Steinke 2022 random-sto"]; o != "reproduced" {
		t.Errorf("random-stop vs grid: %q, want reproduced (%v)", o, outcomes)
	}
	if o := outcomes["Ding et al. (doubling) Figure 3: "]; o != "not reproduced" {
		t.Errorf("Figure 3: %q", o)
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "<table>") || !strings.Contains(string(html), `-versus-default-mnist.png"`) {
		t.Error("report.html has no rendered table or figure")
	}
}

// The report opens with its abstract, counted from the answer table
// (random-stop is 0.04 behind the default at ε = 1 and 0.03 ahead at
// ε = 8 on every seed, give or take the default's ±0.002), then the
// answer table, the contents, whose every link is a heading's anchor on
// GitHub and in the HTML, and the glossary with every term the report
// uses.
func TestReportOpensWithItsAnswer(t *testing.T) {
	out, _ := testReport(t)
	b, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	order := []string{"**Abstract.**", "## Does private tuning pay?", "## " + contentsTitle, "## " + glossaryTitle, "## Machine", "## The papers' results beside ours"}
	last := -1
	for _, h := range order {
		i := strings.Index(md, h)
		if i <= last {
			t.Fatalf("%q at %d, after %d: want the order %q", h, i, last, order)
		}
		last = i
	}
	abstract := md[strings.Index(md, "**Abstract.**"):strings.Index(md, "## Does private tuning pay?")]
	for _, want := range []string{"mnist (3 seeds)", "ε = 1, 8", "Of the 2 (dataset, ε) cells", "*tuning pays* in 1 (mnist at ε = 8)", "*tuning costs* in 1 (mnist at ε = 1)", "*no difference resolved* in none", costSittingTitle} {
		if !strings.Contains(abstract, want) {
			t.Errorf("abstract lacks %q:\n%s", want, abstract)
		}
	}
	if n := strings.Count(abstract, ". "); n < 2 || n > 6 {
		t.Errorf("abstract of %d sentences:\n%s", n, abstract)
	}

	// The contents link to every heading below the title, and to nothing else.
	anchors := map[string]bool{}
	slugs := newSlugger()
	var sections []string
	for _, h := range headings(b) {
		s := slugs.next(h.text)
		anchors[s] = true
		if h.level >= 2 && h.text != contentsTitle {
			sections = append(sections, s)
		}
	}
	contents := md[strings.Index(md, "## "+contentsTitle):strings.Index(md, "## "+glossaryTitle)]
	links := regexp.MustCompile(`\]\(#([^)]*)\)`).FindAllStringSubmatch(contents, -1)
	var linked []string
	for _, l := range links {
		if !anchors[l[1]] {
			t.Errorf("contents link #%s names no heading", l[1])
		}
		linked = append(linked, l[1])
	}
	if !slices.Equal(linked, sections) {
		t.Errorf("contents link %q, want every section %q", linked, sections)
	}
	for _, want := range []string{"#does-private-tuning-pay", "#glossary", "#" + headingSlug(costSittingTitle), "#every-tuner-at-one-total-budget-on-mnist-tb-mnist-n--0-dptune-bench-compare"} {
		if !strings.Contains(contents, "("+want+")") {
			t.Errorf("contents lack %s:\n%s", want, contents)
		}
	}
	html, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range linked {
		if !strings.Contains(string(html), `id="`+s+`"`) || !strings.Contains(string(html), `href="#`+s+`"`) {
			t.Errorf("report.html: no heading with id %q or no link to it", s)
		}
	}

	glossary := md[strings.Index(md, "## "+glossaryTitle):strings.Index(md, "## Machine")]
	for _, term := range []string{"**TNB**", "**ETCV**", "**ε_U-O**", "**ε_U-G**", "**ε_U-P**", "**kϵ**", "**RandGuess**", "**Opt**", "**default**",
		"**non-private selection (not private)**", "**oracle (not private)**", "**tuning pays / tuning costs / no difference resolved**",
		"**reproduced / partly reproduced / not reproduced / not comparable / not run**"} {
		if !strings.Contains(glossary, "- "+term+" — ") {
			t.Errorf("glossary lacks %s", term)
		}
	}
	if !strings.Contains(glossary, "upper bound, not an exact ε") {
		t.Error("the glossary does not say ε_U-O is an upper bound")
	}
}

// A cost sitting is its own section with the machine it recorded, and
// stays out of the answer table; its cost table shows the means a tuning
// measured, "–" where a row reused from an old cache did not, and
// doubling's part runs apart from its final run.
func TestCostSittingSection(t *testing.T) {
	in, out := t.TempDir(), t.TempDir()
	if err := costFixture().Save(in); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteReport(ReportConfig{Inputs: []string{in}, Out: out}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	if strings.Contains(md, "## Does private tuning pay?") || strings.Contains(md, "## Every tuner at one total budget") {
		t.Error("a cost sitting is shown as a comparison")
	}
	for _, want := range []string{
		"## " + costSittingTitle,
		"2 CPUs; load average (1, 5, 15 min) 0.05 0.10 0.20 at the start, 1.95 1.90 1.60 at the end",
		"| default (one run of published settings) | 1 | 8.0 | 16 | 1.94 | 1.0 | 40.0 |",
		"| every candidate once: non-private selection and oracle (*not private*) | 1 | 43 | 84 | 1.95 | 16.0 | 240.0 |",
		"| grid | 1 | 155 | – | – | 16.0 | 240.0 |",
		"| doubling | 1 | 760 | 1500 | 1.97 | 8001.0 | 490.0 |",
		"| doubling: part runs | 1 | 700 | 1390 | 1.99 | 8000.0 | 480.0 |",
		"| doubling: final run | 1 | 60 | 110 | 1.83 | 1.0 | 10.0 |",
		"reused from the cache of an earlier `bench compare`",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}

// Every value is labelled on an axis (LogTicks labelled ε = 1, 2, 4, 8 as
// "1" alone), and a long title is shrunk to fit its width.
func TestPlotTicksAndTitles(t *testing.T) {
	var labels []string
	for _, tk := range valueTicks([]float64{8, 1, 2, 4, 2}).Ticks(1, 8) {
		labels = append(labels, tk.Label)
	}
	if want := []string{"1", "2", "4", "8"}; !slices.Equal(labels, want) {
		t.Errorf("ticks %q, want %q", labels, want)
	}
	if l := valueTicks([]float64{1000, 333.3333}).Ticks(1, 1000); l[0].Label != "333" || l[1].Label != "1000" {
		t.Errorf("ticks %+v", l)
	}
	p := plot.New()
	p.Title.Text = "α_t, percent utilities, the same noise (100× too little), and more words"
	w := vg.Points(300)
	if titleFits(p, w) {
		t.Fatal("the title already fits: the test tests nothing")
	}
	fitTitle(p, w)
	if !titleFits(p, w) {
		t.Errorf("title at %v does not fit %v", p.Title.TextStyle.Font.Size, w)
	}
}

// The HTML renders in a real headless browser: its screenshot is a page
// of text, tables and figures, not a blank or an error page. Skipped
// without chromium (make report-check installs it).
func TestReportInChromium(t *testing.T) {
	var browser string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no chromium: make report-check installs it")
	}
	out, _ := testReport(t)
	shot := filepath.Join(out, "screenshot.png")
	if dir := os.Getenv("DPTUNE_SCREENSHOT_DIR"); dir != "" {
		shot = filepath.Join(dir, "report-screenshot.png")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--window-size=1200,2400", "--screenshot="+shot, "file://"+filepath.Join(out, "report.html"))
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", browser, err, b)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 2400 {
		t.Fatalf("screenshot is %v, want 1200×2400", b)
	}
	// Text, table shading and plotted lines give many colours and many
	// non-white pixels; a blank page has one colour.
	colours, ink := countColours(img)
	if colours < 50 || ink < 0.02 {
		t.Fatalf("screenshot looks blank: %d colours, %.3f of pixels not white", colours, ink)
	}
}

func countColours(img image.Image) (int, float64) {
	seen := map[uint32]bool{}
	var ink, n float64
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[(r>>8)<<16|(g>>8)<<8|bl>>8] = true
			n++
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				ink++
			}
		}
	}
	return len(seen), ink / n
}

// A paper's claim is judged on per-seed differences: random-stop one point
// ahead of grid on every seed, while the seeds themselves spread the
// accuracies by ten points, is ahead beyond the paired interval (the
// unpaired intervals would overlap); the section names the network and the
// training-set size.
func TestCompareClaimsArePaired(t *testing.T) {
	entries := []CompareEntry{{Tuner: "grid"}, {Tuner: "randomstop", Variant: "tnb"}}
	var rows []CompareRow
	for s := uint64(1); s <= 5; s++ {
		spread := 0.1 * float64(s%3) * float64(s)
		rows = append(rows, CompareRow{Tuner: "grid", Budget: 8, Seed: s, TestAccuracy: 0.5 + spread, Released: true},
			CompareRow{Tuner: "randomstop", Variant: "tnb", Budget: 8, Seed: s, TestAccuracy: 0.51 + spread, Released: true})
	}
	rep := &CompareReport{Settings: CompareSettings{Dataset: "mnist", Model: "scatter-linear-mnist", NominalSize: 60000, Entries: entries,
		Budgets: []float64{8}, Seeds: []uint64{1, 2, 3, 4, 5}, Delta: 1e-5}, Rows: rows, Cells: compareCells(entries, []float64{8}, rows)}
	d, half, n := rep.paired(entries[1], entries[0], 8)
	if n != 5 || d < 0.01-1e-12 || d > 0.01+1e-12 || half > 1e-12 {
		t.Fatalf("paired difference %v ± %v over %d seeds, want 0.01 ± 0 over 5", d, half, n)
	}
	x, _ := rep.cell("randomstop", "tnb", 8)
	y, _ := rep.cell("grid", "", 8)
	if x.Accuracy-y.Accuracy > x.CI95+y.CI95 {
		t.Fatalf("the unpaired intervals (%v, %v) already separate the tuners: the test does not test pairing", x.CI95, y.CI95)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var w strings.Builder
	vs, err := compareSection(&w, found{"compare.json", "compare.json", b})
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 || vs[0].Outcome != "reproduced" || !strings.Contains(vs[0].Ours, "+0.010 ± 0.000 (5 seeds)") {
		t.Errorf("verdicts %+v", vs)
	}
	if !strings.Contains(w.String(), "mnist (scatter-linear-mnist, n = 60000;") {
		t.Errorf("section header: %.200s", w.String())
	}
}

// The lead table lists every seed paper: a paper judged by an input keeps
// its verdicts, and each other headline appears once as "not run" with its
// reason.
func TestLeadTableNamesEveryPaper(t *testing.T) {
	out, sum := testReport(t)
	runs := map[string]int{}
	judged := map[string]bool{}
	for _, v := range sum.Verdicts {
		if v.Outcome == "not run" {
			runs[v.Paper]++
			if v.Why == "" {
				t.Errorf("%s: not run without a reason", v.Paper)
			}
		} else {
			judged[v.Paper] = true
		}
	}
	for _, h := range headlines {
		switch {
		case judged[h.Paper] && runs[h.Paper] > 0:
			t.Errorf("%s is judged and also listed as not run", h.Paper)
		case !judged[h.Paper] && runs[h.Paper] != 1:
			t.Errorf("%s: %d not-run rows, want 1", h.Paper, runs[h.Paper])
		}
	}
	if !judged["Papernot & Steinke 2022"] || !judged["Ding et al. (doubling)"] || runs["Wang et al. 2023 (DP-HyPO)"] != 1 {
		t.Errorf("judged %v, not run %v", judged, runs)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| Wang et al. 2023 (DP-HyPO) | Table 1") || !strings.Contains(string(md), "**not run**") {
		t.Error("report.md lacks the DP-HyPO headline")
	}
}

// Figures 5–6's verdict follows the share of the RandGuess–Opt gap that
// DP-Hype recovers at the non-private points with ε ≥ 1, and only those.
func TestVoteRealVerdict(t *testing.T) {
	pt := func(eps, hype float64, final string) VoteRealPoint {
		return VoteRealPoint{Setting: "iid", Clients: 10, FinalTraining: final, Epsilon: eps, Opt: 0.9, RandGuess: 0.4, DPHype: hype}
	}
	for _, c := range []struct {
		pts  []VoteRealPoint
		want string
	}{
		// 0.8 of the gap is 0.4 + 0.8·0.5 = 0.8: three of four points above it.
		{[]VoteRealPoint{pt(1, 0.81, "non-private"), pt(2, 0.85, "non-private"), pt(5, 0.9, "non-private"), pt(5, 0.5, "non-private")}, "reproduced"},
		{[]VoteRealPoint{pt(1, 0.79, "non-private"), pt(2, 0.85, "non-private"), pt(5, 0.9, "non-private"), pt(5, 0.5, "non-private")}, "not reproduced"},
		// ε < 1 and the dp-sgd figure do not count.
		{[]VoteRealPoint{pt(0.5, 0.4, "non-private"), pt(8, 0.4, "dp-sgd"), pt(1, 0.9, "non-private")}, "reproduced"},
		{[]VoteRealPoint{pt(0.5, 0.9, "non-private")}, "not comparable"},
	} {
		if v := voteRealVerdict("mnist", c.pts); v.Outcome != c.want {
			t.Errorf("%+v: %s (%s), want %s", c.pts, v.Outcome, v.Ours, c.want)
		}
	}
	// A miss is told by client count, with the vote noise at each count's
	// smallest ε ≥ 1.
	many := func(p VoteRealPoint) VoteRealPoint { p.Clients = 50; return p }
	pts := []VoteRealPoint{pt(2, 0.5, "non-private"), pt(1, 0.5, "non-private"), many(pt(1, 0.9, "non-private")), many(pt(0.5, 0.4, "non-private"))}
	pts[0].NoiseStddev, pts[1].NoiseStddev, pts[2].NoiseStddev = 6.8, 12.8, 12.7
	pts[0].Noiseless, pts[1].Noiseless, pts[2].Noiseless = 0.9, 0.8, 0.9 // 100%, 80% and 100% of the gap
	v := voteRealVerdict("mnist", pts)
	want := "n = 10 clients, 0 of 2 (vote noise σ = 12.8 votes at ε = 1, against at most 10 votes for a candidate; without noise the votes' winner recovers ≥ 80% of the gap); " +
		"n = 50 clients, 1 of 1 (vote noise σ = 12.7 votes at ε = 1"
	if v.Outcome != "not reproduced" || !strings.Contains(v.Why, want) {
		t.Errorf("%s: %s", v.Outcome, v.Why)
	}
}

// pooledGap pools GP − Uniform over the γ and, from s.e. ∝ 1/√repeats,
// says how many tunings a cell would need to resolve the paper's smallest
// gap (+0.002): a median 2 s.e. of 0.004 at 200 tunings needs 200·2² = 800.
func TestPooledGap(t *testing.T) {
	se := 0.004 / 2 / math.Sqrt2 // each side's s.e., so that a cell's 2 s.e. is 0.004
	cell := func(d float64) TunerSimCell {
		return TunerSimCell{GPAccuracy: 0.97 + d, GPStdErr: se, UniformAccuracy: 0.97, UniformStdErr: se}
	}
	flat := pooledGap([]TunerSimCell{cell(0), cell(0), cell(0)}, 200)
	// Pooled: 0 ± 0.004/√3 = 0.0023, not below the paper's 0.002.
	if !strings.Contains(flat, "+0.0000 ± 0.0023") || !strings.Contains(flat, "does not rule out") || !strings.Contains(flat, "about 800 tunings") {
		t.Errorf("flat cells: %s", flat)
	}
	behind := pooledGap([]TunerSimCell{cell(-0.002), cell(-0.002), cell(-0.002), cell(-0.002)}, 200)
	if !strings.Contains(behind, "-0.0020 ± 0.0020") || !strings.Contains(behind, "absent, not hidden by noise") {
		t.Errorf("GP behind: %s", behind)
	}
}

// Results on the JPEG-derived CIFAR-10 copy are labelled not comparable
// with published figures; MNIST's are not.
func TestDatasetNote(t *testing.T) {
	if !strings.Contains(datasetNote("cifar10"), "not comparable") {
		t.Errorf("cifar10: %q", datasetNote("cifar10"))
	}
	if n := datasetNote("mnist"); n != "" {
		t.Errorf("mnist: %q", n)
	}
}

// A claim ahead beyond the intervals at some budgets and within them at
// the others is partly reproduced, said so, not folded into "not
// reproduced"; behind anywhere, it is not reproduced.
func TestOutcomeGivesPartialResultsAsPartial(t *testing.T) {
	for _, c := range []struct {
		ahead, within, behind int
		want                  string
	}{{3, 1, 0, "reproduced"}, {2, 2, 0, "partly reproduced"}, {1, 3, 0, "partly reproduced"}, {0, 4, 0, "not reproduced"}, {3, 0, 1, "not reproduced"}} {
		if got, why := outcome(c.ahead, c.within, c.behind, "random-stop ahead", "grid"); got != c.want {
			t.Errorf("%d ahead, %d within, %d behind: %q (%s), want %q", c.ahead, c.within, c.behind, got, why, c.want)
		}
	}
}
