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
	"strings"
	"testing"
	"time"
)

// testReport writes a report over real outputs made here: the doubling
// figures and a comparison assembled from rows.
func testReport(t *testing.T) (string, *ReportSummary) {
	t.Helper()
	in, out := t.TempDir(), t.TempDir()
	if _, err := DoublingFigures(context.Background(), filepath.Join(in, "doubling"), 2, 2); err != nil {
		t.Fatal(err)
	}
	entries := []CompareEntry{{Tuner: "grid"}, {Tuner: "randomstop", Variant: "tnb"}}
	var rows []CompareRow
	for s := uint64(1); s <= 3; s++ {
		for _, b := range []float64{1, 8} {
			rows = append(rows, CompareRow{Tuner: "grid", Budget: b, Seed: s, TestAccuracy: 0.5 + 0.04*b + 0.01*float64(s), Released: true, EpsilonRDP: b},
				CompareRow{Tuner: "randomstop", Variant: "tnb", Budget: b, Seed: s, TestAccuracy: 0.7 + 0.03*b + 0.01*float64(s), Released: true, EpsilonRDP: b})
		}
	}
	rep := &CompareReport{Settings: CompareSettings{Dataset: "mnist", Model: "tb-mnist", Entries: entries, Budgets: []float64{1, 8}, Seeds: []uint64{1, 2, 3}, Delta: 1e-5},
		Rows: rows, Cells: compareCells(entries, []float64{1, 8}, rows)}
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
	sum, err := WriteReport(ReportConfig{Inputs: []string{in}, Out: out})
	if err != nil {
		t.Fatal(err)
	}
	return out, sum
}

// The report holds every section and figure, its comparison table's rows
// start with the tuner names, and the verdicts follow from the numbers:
// random-stop is 0.2 − 0.01·ε ahead of grid with no spread between the
// seeds' offsets, so ahead beyond the interval at both budgets.
func TestReportSectionsAndVerdicts(t *testing.T) {
	out, sum := testReport(t)
	if len(sum.Sections) != 2 || len(sum.Figures) != 4 {
		t.Fatalf("sections %v, figures %v", sum.Sections, sum.Figures)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n| grid |", "\n| randomstop (tnb) |", "figures/00-compare-mnist.png", "figures/01-figure3.png"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
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
	if !strings.Contains(string(html), "<table>") || !strings.Contains(string(html), `<img src="figures/00-compare-mnist.png"`) {
		t.Error("report.html has no rendered table or figure")
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
