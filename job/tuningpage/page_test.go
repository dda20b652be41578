package tuningpage_test

import (
	"context"
	"encoding/json"
	"html"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/job/tuningpage"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// tinyMNIST is a Source of n synthetic 28×28 images whose label shows in
// the image, with nominal size n; its test set is a further 50 images
// (job's Example tests' source).
func tinyMNIST(n int) job.Source {
	make := func(n int, rng *rand.Rand) *data.Dataset {
		d := &data.Dataset{Name: "tiny", N: n, C: 1, H: 28, W: 28, Classes: 10, X: make([]float32, n*784), Y: make([]uint8, n)}
		for i := range d.Y {
			d.Y[i] = uint8(rng.IntN(10))
			for k := 0; k < 784; k++ {
				d.X[i*784+k] = float32(rng.NormFloat64() * 0.3)
				if k%10 == int(d.Y[i]) {
					d.X[i*784+k]++
				}
			}
		}
		return d
	}
	return job.Source{Name: "tiny", Arch: model.MNIST, NominalN: n, Load: func() (*data.Dataset, *data.Dataset, error) {
		rng := rand.New(rand.NewPCG(1, 2))
		return make(n, rng), make(50, rng), nil
	}}
}

// testSpace is three learning rates (log) by two clipping norms; the
// default settings below are not among them.
var testSpace = tuning.Space{Name: "three-by-two", Dims: []tuning.Dim{
	{Name: tuning.LearningRate, Values: []float64{0.05, 0.1, 0.5}, Log: true},
	{Name: tuning.ClipNorm, Values: []float64{0.5, 1}},
}}

var testDefault = &job.TrainDefaults{BatchSize: 50, Epochs: 1, LearningRate: 0.2, Momentum: 0.5, ClipNorm: 1, Source: "settings for the test"}

// tunings are the seeded tunings the tests draw: grid with the default
// among its candidates, random-stop, DP-HyPO, the doubling tuner and the
// recommended preset, each with the NOT PRIVATE diagnostics where the
// tuner gives them.
func tunings() map[string]job.TuneSpec {
	seed := uint64(3)
	base := job.TuneSpec{Data: tinyMNIST(600), Space: testSpace, Epsilon: 8, Delta: 1e-5, Epochs: 1, BatchSize: 50,
		Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: &seed, Diagnostics: true, Default: testDefault}
	grid, rs, gp, dbl, rec := base, base, base, base, base
	grid.Tuner, grid.IncludeDefault = "grid", true
	rs.Tuner, rs.Repetitions, rs.IncludeDefault, rs.DefaultWeight = "randomstop", accounting.PoissonRepetitions(6), true, 0.3
	// DP-HyPO takes no default among its candidates: no baseline either.
	gp.Tuner, gp.Repetitions, gp.Default = "gp", accounting.TNBRepetitions(1, 0.2), nil
	dbl.Tuner, dbl.Validation, dbl.ScoreNoise, dbl.Diagnostics, dbl.IncludeDefault = "doubling", "", 0, false, true
	dbl.Options = tuning.DoublingOptions{Partitions: 2, Epsilon0: 0.2, Granularity: 0.2, MaxIterations: 4, PartEpochs: 1}.Values()
	// The recommended preset's tuning subset needs 100 expected
	// validation examples in it.
	rec.Tuner, rec.Data, rec.BatchSize, rec.Epsilon = tuning.RecommendedName, tinyMNIST(12000), 200, 4
	rec.Validation, rec.ValSize, rec.ScoreNoise = "", 0, 0
	return map[string]job.TuneSpec{"grid": grid, "randomstop": rs, "gp": gp, "doubling": dbl, "recommended": rec}
}

// tuned is a finished tuning: its release directory (report.json, and
// the model) and its NOT PRIVATE diagnostics (nil for none), and the runs
// in them.
type tuned struct {
	out  string
	diag *job.NotPrivateDiagnostics
	runs []tuning.RunRecord
}

var (
	tunedOnce sync.Once
	tunedDir  string
	tunedAll  map[string]tuned
	tunedErr  error
)

// tuneAll runs tunings() once for the package's tests, into a directory
// removed by TestMain.
func tuneAll(t *testing.T) map[string]tuned {
	t.Helper()
	tunedOnce.Do(func() {
		tunedDir, tunedErr = os.MkdirTemp("", "tuningpage-test-")
		if tunedErr != nil {
			return
		}
		tunedAll = map[string]tuned{}
		for name, spec := range tunings() {
			rel, diag, err := job.Tune(context.Background(), spec)
			if err != nil {
				tunedErr = err
				return
			}
			tu := tuned{out: filepath.Join(tunedDir, name)}
			if tunedErr = rel.Save(tu.out); tunedErr != nil {
				return
			}
			if diag != nil && spec.Diagnostics {
				tu.diag, tu.runs = diag, diag.Runs
			}
			tunedAll[name] = tu
		}
	})
	if tunedErr != nil {
		t.Fatal(tunedErr)
	}
	return tunedAll
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tunedDir != "" {
		os.RemoveAll(tunedDir)
	}
	os.Exit(code)
}

// write writes the pages of tu into a copy of its release directory under
// t's temporary directory.
func write(t *testing.T, tu tuned) tuningpage.Written {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(tu.out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "report.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := tuningpage.Write(tuningpage.Pages{Release: out, Space: testSpace, Diagnostics: tu.diag})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

var (
	styleOrScript = regexp.MustCompile(`(?s)<(style|script)[^>]*>.*?</(style|script)>`)
	tag           = regexp.MustCompile(`(?s)<[^>]*>`)
	number        = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?`)
)

// visibleText is the text of an HTML page a reader sees, the figures'
// SVG text included: the page without its style, its tags and their
// attributes.
func visibleText(page string) string {
	page = styleOrScript.ReplaceAllString(page, " ")
	return html.UnescapeString(tag.ReplaceAllString(page, " "))
}

// released is every number report.json holds, in its values and inside
// its strings (a ledger label, the default's command), and the public
// space's: its values, the number of values of each dimension and of
// candidates.
func released(t *testing.T, report []byte, sp tuning.Space) []float64 {
	t.Helper()
	var v any
	if err := json.Unmarshal(report, &v); err != nil {
		t.Fatal(err)
	}
	var out []float64
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case float64:
			out = append(out, v)
		case string:
			for _, s := range number.FindAllString(v, -1) {
				x, _ := strconv.ParseFloat(s, 64)
				out = append(out, x)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, e := range v {
				walk(k)
				walk(e)
			}
		}
	}
	walk(v)
	for _, d := range sp.Dims {
		out = append(out, d.Values...)
		out = append(out, float64(len(d.Values)))
	}
	return append(out, float64(sp.Size()))
}

// matches reports whether the number s, as printed, is one of values
// rounded to the digits s shows.
func matches(s string, values []float64) bool {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		exp, _ = strconv.Atoi(s[i+1:])
	}
	dec := 0
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		dec = len(mant) - i - 1
	}
	tol := 0.5 * math.Pow(10, float64(exp-dec)) * (1 + 1e-9)
	for _, v := range values {
		if math.Abs(v-x) <= tol {
			return true
		}
	}
	return false
}

// unreleased returns the numbers on page that are not in allowed.
func unreleased(page string, allowed []float64) []string {
	var bad []string
	for _, s := range number.FindAllString(visibleText(page), -1) {
		if !matches(s, allowed) {
			bad = append(bad, s)
		}
	}
	return bad
}

// tuning.html shows only what report.json releases: every number a reader
// sees on it — in its text, its tables and its figures' labels — is one of
// report.json's or of the public space's; no number that only the NOT
// PRIVATE diagnostics hold (the number of runs, another run's score) is
// on it, and the check catches one planted there. It shows the selected
// candidate, the released score, each ε component and the total, and the
// published default.
func TestReleasePageShowsOnlyTheRelease(t *testing.T) {
	for name, tu := range tuneAll(t) {
		t.Run(name, func(t *testing.T) {
			w := write(t, tu)
			if w.Release == "" {
				t.Fatal("no release page written")
			}
			page, err := os.ReadFile(w.Release)
			if err != nil {
				t.Fatal(err)
			}
			report, err := os.ReadFile(filepath.Join(tu.out, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			allowed := released(t, report, testSpace)
			if bad := unreleased(string(page), allowed); len(bad) > 0 {
				t.Errorf("numbers on tuning.html that report.json does not release: %q", bad)
			}
			// Diagnostics-only numbers: each must be absent, and one
			// planted on the page must be caught.
			var hidden []string
			for _, r := range tu.runs {
				s := strconv.FormatFloat(r.Score, 'f', 4, 64)
				if !matches(s, allowed) {
					hidden = append(hidden, s)
				}
			}
			if k := strconv.Itoa(len(tu.runs)); len(tu.runs) > 0 && !matches(k, allowed) {
				hidden = append(hidden, k)
			}
			text := visibleText(string(page))
			for _, s := range hidden {
				if slices := number.FindAllString(text, -1); contains(slices, s) {
					t.Errorf("tuning.html shows %s, which only the NOT PRIVATE diagnostics hold", s)
				}
			}
			if len(hidden) > 0 {
				planted := strings.Replace(string(page), "</body>", "<p>"+hidden[0]+"</p></body>", 1)
				if bad := unreleased(planted, allowed); !contains(bad, hidden[0]) {
					t.Errorf("a planted diagnostics number %s is not caught", hidden[0])
				}
			} else if tu.diag != nil {
				t.Errorf("the diagnostics hold no number report.json lacks: the check above tests nothing")
			}
			var rep struct {
				Selected   map[string]float64        `json:"selected"`
				Score      *float64                  `json:"validation_score"`
				Epsilon    float64                   `json:"epsilon"`
				Components []tuning.EpsilonComponent `json:"epsilon_components"`
				Baseline   *job.Baseline             `json:"baseline"`
			}
			if err := json.Unmarshal(report, &rep); err != nil {
				t.Fatal(err)
			}
			want := []string{"<title>dptune tuning: " + name, "ε = " + strconv.FormatFloat(rep.Epsilon, 'f', 4, 64)}
			for _, d := range testSpace.Dims {
				want = append(want, "<td><b>"+strconv.FormatFloat(rep.Selected[d.Name], 'g', 4, 64)+"</b></td>")
			}
			if rep.Score != nil {
				want = append(want, strconv.FormatFloat(*rep.Score, 'f', 4, 64))
			}
			if len(rep.Components) == 0 {
				t.Fatal("report.json has no epsilon_components")
			}
			for _, c := range rep.Components {
				want = append(want, "<td>"+c.Name+"</td><td>"+strconv.FormatFloat(*c.Epsilon, 'f', 4, 64)+"</td>")
			}
			switch {
			case rep.Baseline != nil:
				want = append(want, html.EscapeString(rep.Baseline.Command), "<th>published default</th>")
			case name != "gp" && name != "doubling":
				// DP-HyPO takes no default; the doubling tuner's report
				// has no baseline.
				t.Fatal("report.json has no baseline")
			case strings.Contains(string(page), "published default"):
				t.Error("tuning.html shows a published default report.json does not have")
			}
			for _, s := range want {
				if !strings.Contains(string(page), s) {
					t.Errorf("tuning.html lacks %q", s)
				}
			}
			if n := strings.Count(string(page), "<svg"); n != 4 {
				t.Errorf("%d figures, want 4 (the space's strips, its plane, the scores, the privacy)", n)
			}
			if fi, err := os.Stat(w.Release); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("tuning.html: %v, %v; want mode 0644", fi.Mode(), err)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// The curator page, built from the diagnostics, shows every run: K and
// each run's score, in the curator directory beside the release (mode
// 0600 in a 0700 directory), labelled NOT PRIVATE in its title and body;
// without diagnostics none is written, and an earlier one is removed.
func TestCuratorPageShowsEveryRun(t *testing.T) {
	for name, tu := range tuneAll(t) {
		t.Run(name, func(t *testing.T) {
			w := write(t, tu)
			if tu.diag == nil {
				if w.Curator != "" {
					t.Fatalf("a curator page %s without diagnostics", w.Curator)
				}
				return
			}
			if want := filepath.Join(job.CuratorDir(filepath.Dir(w.Release)), tuningpage.CuratorFile); w.Curator != want {
				t.Fatalf("curator page at %s, want %s", w.Curator, want)
			}
			b, err := os.ReadFile(w.Curator)
			if err != nil {
				t.Fatal(err)
			}
			page := string(b)
			if !regexp.MustCompile(`<title>NOT PRIVATE[^<]*</title>`).MatchString(page) {
				t.Error("the curator page's title does not say NOT PRIVATE")
			}
			if body := page[strings.Index(page, "<body>"):]; strings.Count(body, "NOT PRIVATE") < 2 {
				t.Error("the curator page's body does not say NOT PRIVATE")
			}
			if !strings.Contains(page, "<b>"+strconv.Itoa(len(tu.runs))+"</b>") {
				t.Errorf("the curator page does not give the number of runs, %d", len(tu.runs))
			}
			for i, r := range tu.runs {
				row := "<tr><td>" + strconv.Itoa(i+1) + "</td>"
				if !strings.Contains(page, row) || !strings.Contains(page, "<td>"+strconv.FormatFloat(r.Score, 'f', 4, 64)+"</td>") {
					t.Errorf("run %d (score %v) is not on the curator page", i+1, r.Score)
				}
			}
			fi, err := os.Stat(w.Curator)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("curator page: %v, %v; want mode 0600", fi.Mode(), err)
			}
			di, err := os.Stat(filepath.Dir(w.Curator))
			if err != nil || di.Mode().Perm() != 0o700 {
				t.Errorf("curator directory: %v, %v; want mode 0700", di.Mode(), err)
			}
			// A later tuning into the same directory without diagnostics
			// leaves no curator page of this one's.
			if _, err := tuningpage.Write(tuningpage.Pages{Release: filepath.Dir(w.Release), Space: testSpace}); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(w.Curator); !os.IsNotExist(err) {
				t.Errorf("the earlier curator page is still there: %v", err)
			}
		})
	}
}

// A failed job's directory (failed-report.json, the earlier release moved
// into previous/) gets no page, and the earlier page follows its report
// into previous/; without an earlier report it is removed. A space that
// is not the report's is refused.
func TestFailedReleaseAndWrongSpace(t *testing.T) {
	tu := tuneAll(t)["grid"]
	w := write(t, tu)
	dir := filepath.Dir(w.Release)
	prev := filepath.Join(dir, "previous")
	if err := os.Mkdir(prev, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "report.json"), filepath.Join(prev, "report.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "failed-report.json"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := tuningpage.Write(tuningpage.Pages{Release: dir, Space: testSpace})
	if err != nil || got.Release != "" {
		t.Fatalf("Write on a failed release: %+v, %v; want nothing written, no error", got, err)
	}
	if _, err := os.Stat(filepath.Join(prev, tuningpage.File)); err != nil {
		t.Errorf("the earlier page did not follow its report into previous/: %v", err)
	}
	if _, err := os.Stat(w.Release); !os.IsNotExist(err) {
		t.Errorf("a page is left beside failed-report.json: %v", err)
	}
	// No earlier report: the page is removed.
	if err := os.WriteFile(w.Release, []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(prev); err != nil {
		t.Fatal(err)
	}
	if _, err := tuningpage.Write(tuningpage.Pages{Release: dir, Space: testSpace}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(w.Release); !os.IsNotExist(err) {
		t.Errorf("a stale page is left beside failed-report.json: %v", err)
	}

	other := testSpace
	other.Name = "another"
	if _, err := tuningpage.Write(tuningpage.Pages{Release: tu.out, Space: other}); err == nil || !strings.Contains(err.Error(), `"another"`) {
		t.Errorf("a space that is not the report's: %v", err)
	}
}

// A selection that chose nothing, whose final run trained the default
// (report.json's nothing_selected, without a validation score), says so,
// and shows no score.
func TestNothingSelected(t *testing.T) {
	tu := tuneAll(t)["recommended"]
	b, err := os.ReadFile(filepath.Join(tu.out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	rep["nothing_selected"] = true
	delete(rep, "validation_score")
	delete(rep, "validation_noisy_count")
	if b, err = json.Marshal(rep); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if err := os.WriteFile(filepath.Join(out, "report.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := tuningpage.Write(tuningpage.Pages{Release: out, Space: testSpace})
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(w.Release)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), "The selection chose nothing") || strings.Contains(string(page), "validation score (noisy)") {
		t.Errorf("a selection that chose nothing is not said, or a score is shown")
	}
}
