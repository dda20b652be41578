package tuningpage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

const (
	// File is the release page's name, beside report.json in the release
	// directory.
	File = "tuning.html"
	// CuratorFile is the NOT PRIVATE page's name in the curator directory
	// (job.CuratorDir of the release directory).
	CuratorFile = "tuning-not-private.html"
)

// maxFileBytes bounds the report.json Write reads (a ledger of a long
// tuning is a few hundred kilobytes).
const maxFileBytes = 64 << 20

// Pages is what Write builds a tuning's pages from.
type Pages struct {
	// Release is the release directory (dptune tune's --out) holding the
	// report.json the release page is built from; tuning.html is written
	// beside it.
	Release string
	// Space is the public search space the tuning ran over; its Name must
	// be report.json's space.
	Space tuning.Space
	// Diagnostics, if not nil, are the NOT PRIVATE diagnostics of the
	// same tuning (job.Tune's second result with TuneSpec.Diagnostics set:
	// what --diagnostics writes): the curator page is built from their
	// runs, in job.CuratorDir(Release).
	Diagnostics *job.NotPrivateDiagnostics
}

// Written names the pages Write wrote; "" for a page it did not write.
type Written struct {
	Release string // Release/tuning.html
	Curator string // job.CuratorDir(Release)/tuning-not-private.html: NOT PRIVATE
}

// Write writes the pages of the tuning released in p.Release:
//
//   - tuning.html in p.Release (mode 0644), built from report.json and
//     p.Space alone: the selected candidate within the space, its released
//     score, the ε of each ledger component and the total, and the
//     published default where the report has one (see the package
//     documentation for what it never shows);
//   - with p.Diagnostics, tuning-not-private.html in job.CuratorDir
//     (p.Release) (mode 0600; the directory is created with mode 0700),
//     built from the diagnostics' runs and report.json: every run,
//     labelled NOT PRIVATE. Without them, a curator page an earlier
//     tuning left there is removed, since it is not this tuning's.
//
// A directory holding failed-report.json and no report.json (a failed job:
// job.Release.Save moved the earlier release into previous/) gets no page;
// an earlier tuning.html is moved into previous/ beside the report it
// belongs to (removed if there is none), and Write returns no error.
//
// Each page is written through a temporary file renamed into place
// (fsx.WriteFileAtomic), so a symbolic link planted at its path is
// replaced, never written through. Write returns an error when report.json
// cannot be read or is not a tuning's, when p.Space is not the report's
// space, or when a page cannot be written.
func Write(p Pages) (w Written, err error) {
	defer func() {
		// gonum/plot panics on data it cannot draw (a non-finite point);
		// nothing Write is given should hold one, and a caller whose
		// privacy is already spent must get an error, not a crash.
		if r := recover(); r != nil {
			err = fmt.Errorf("tuningpage: drawing a figure: %v", r)
		}
	}()
	b, err := fsx.ReadFile(filepath.Join(p.Release, "report.json"), maxFileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		if _, ferr := os.Lstat(filepath.Join(p.Release, "failed-report.json")); ferr == nil {
			return w, tidyFailed(p.Release)
		}
	}
	if err != nil {
		return w, fmt.Errorf("tuningpage: %w", err)
	}
	rep, err := decodeReport(b)
	if err != nil {
		return w, err
	}
	if rep.Space != p.Space.Name {
		return w, fmt.Errorf("tuningpage: the space given is %q, report.json's is %q", p.Space.Name, rep.Space)
	}
	page, err := releasePage(rep, p.Space)
	if err != nil {
		return w, err
	}
	path := filepath.Join(p.Release, File)
	if err := fsx.WriteFileAtomic(path, page, 0o644); err != nil {
		return w, fmt.Errorf("tuningpage: %w", err)
	}
	w.Release = path
	curator := filepath.Join(job.CuratorDir(p.Release), CuratorFile)
	if p.Diagnostics == nil {
		if err := os.Remove(curator); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return w, fmt.Errorf("tuningpage: an earlier tuning's curator page: %w", err)
		}
		return w, nil
	}
	page, err = curatorPage(rep, p.Space, p.Diagnostics.Runs, path)
	if err != nil {
		return w, err
	}
	if err := os.MkdirAll(filepath.Dir(curator), 0o700); err != nil {
		return w, fmt.Errorf("tuningpage: %w", err)
	}
	if err := fsx.WriteFileAtomic(curator, page, 0o600); err != nil {
		return w, fmt.Errorf("tuningpage: %w", err)
	}
	w.Curator = curator
	return w, nil
}

// tidyFailed moves dir's tuning.html into dir/previous when that holds
// the earlier release's report.json, else removes it.
func tidyFailed(dir string) error {
	page := filepath.Join(dir, File)
	if _, err := os.Lstat(page); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	prev := filepath.Join(dir, "previous")
	if fi, err := os.Lstat(filepath.Join(prev, "report.json")); err == nil && fi.Mode().IsRegular() {
		if err := os.Rename(page, filepath.Join(prev, File)); err != nil {
			return fmt.Errorf("tuningpage: %w", err)
		}
		return nil
	}
	if err := os.Remove(page); err != nil {
		return fmt.Errorf("tuningpage: %w", err)
	}
	return nil
}

// report is the part of a tuning's report.json the pages read: the fields
// job.TuneReport, tuning.DoublingReport and job.VoteReport share or add,
// under their JSON names. A field a report lacks stays zero.
type report struct {
	Tuner           string             `json:"tuner"`
	Dataset         string             `json:"dataset"`
	Space           string             `json:"space"`
	Selected        map[string]float64 `json:"selected"`
	SelectedChoices map[string]string  `json:"selected_choices"`
	Fixed           map[string]float64 `json:"fixed"`
	Clipping        string             `json:"clipping"`
	AutoClipGamma   float64            `json:"auto_clip_gamma"`
	Baseline        *job.Baseline      `json:"baseline"`
	ValidationScore *float64           `json:"validation_score"`
	ValidationCount *int64             `json:"validation_noisy_count"`
	Validation      string             `json:"validation"`
	ValidationSize  int                `json:"validation_size"`
	TestAccuracy    *float64           `json:"test_accuracy"`
	Epsilon         *float64           `json:"epsilon"`
	Delta           float64            `json:"delta"`
	Accountant      string             `json:"accountant"`
	Approximate     bool               `json:"approximate"`
	GenericEpsilon  *float64           `json:"papernot_steinke_epsilon"`
	// Repetitions is the public distribution K was drawn from (absent for
	// a tuner without one).
	Repetitions     *accounting.Repetitions   `json:"runs_distribution"`
	IncludesDefault bool                      `json:"includes_default"`
	SelectionShare  float64                   `json:"selection_share"`
	Subsample       float64                   `json:"subsample"`
	Fallback        bool                      `json:"fallback_first_candidate"`
	NothingSelected bool                      `json:"nothing_selected"`
	Interrupted     bool                      `json:"interrupted"`
	Failed          string                    `json:"failed"`
	Components      []tuning.EpsilonComponent `json:"epsilon_components"`
	Ledger          struct {
		Entries []struct {
			Label string `json:"label"`
		} `json:"entries"`
	} `json:"ledger"`
}

func decodeReport(b []byte) (*report, error) {
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("tuningpage: report.json: %w", err)
	}
	if r.Tuner == "" {
		return nil, fmt.Errorf("tuningpage: report.json is not a tuning's report (it names no tuner)")
	}
	return &r, nil
}

// fixed4 formats an ε or a score: four decimals.
func fixed4(x float64) string { return strconv.FormatFloat(x, 'f', 4, 64) }

// short formats a setting to four significant digits.
func short(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// setting is one row of the selected candidate's table.
type setting struct {
	Name, Selected, Default string
	Note                    string
}

// releaseView is the release page's template data.
type releaseView struct {
	Report     *report
	Space      tuning.Space
	Font       template.CSS
	Style      template.CSS
	Delta      string
	Lead       string
	Hidden     string
	Settings   []setting
	HasDef     bool
	Notes      []string
	Score      string
	Test       string
	Epsilon    string
	Generic    string
	Comps      []component
	Figures    []figure
	Privacy    figure
	Scores     *figure
	Labels     []string
	Candidates int    // the space's size
	Verdict    string // whether the selection is the published default
}

// component is one row of the ε table.
type component struct{ Name, Epsilon, Note string }

// figure is one inline SVG with its caption.
type figure struct {
	SVG     template.HTML
	Caption string
}

// releasePage renders tuning.html for rep over sp.
func releasePage(rep *report, sp tuning.Space) ([]byte, error) {
	v := releaseView{Report: rep, Space: sp, Candidates: sp.Size(), Style: style,
		Delta: strconv.FormatFloat(rep.Delta, 'g', -1, 64)}
	var err error
	if v.Font, err = fontFace(); err != nil {
		return nil, err
	}
	v.intro(rep)
	v.Settings, v.HasDef = settingsOf(rep, sp)
	if b := rep.Baseline; b != nil && b.SelectedIsBaseline != nil {
		v.Verdict = "The tuning selected other settings than these."
		if *b.SelectedIsBaseline {
			v.Verdict = "The tuning selected these settings."
		}
	}
	v.Notes = releaseNotes(rep)
	v.numbers(rep)
	if err := v.figures(rep, sp); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := releaseTemplate.Execute(&b, v); err != nil {
		return nil, fmt.Errorf("tuningpage: %w", err)
	}
	return b.Bytes(), nil
}

// intro says what the page shows (everything is in report.json) and what
// it does not: the scores and the number of runs that stay hidden.
func (v *releaseView) intro(rep *report) {
	v.Lead = "Everything on this page is in report.json beside it: the selected candidate within the search space, its released score, the privacy each part of the tuning spent and the total"
	if rep.Baseline != nil {
		v.Lead += ", and the published default the tuning is measured against"
	}
	v.Lead += "."
	v.Hidden = "Only the selected run's score is released: the other runs' scores are not in report.json, so they are not here either."
	if rep.ValidationScore == nil {
		v.Hidden = "No run's validation score is released: none is in report.json, so none is here."
	}
	if r := rep.Repetitions; r != nil && r.Distribution != accounting.Fixed {
		v.Hidden += " The number of runs was drawn from " + r.String() + " and stays hidden: the guarantee needs it hidden."
	}
}

// settingsOf is the table of settings: each dimension of sp with the
// selected value and the published default's, then the selected and fixed
// settings sp does not vary, and automatic clipping; hasDef says a
// default value is in it.
func settingsOf(rep *report, sp tuning.Space) (settings []setting, hasDef bool) {
	def := baselineValues(rep.Baseline)
	for _, d := range sp.Dims {
		s := setting{Name: d.Name, Selected: "—", Default: "—"}
		if x, ok := rep.Selected[d.Name]; ok {
			s.Selected = valueLabel(d, x, rep.SelectedChoices[d.Name])
		}
		if x, ok := def(d); ok {
			s.Default = valueLabel(d, x, "")
			hasDef = true
		}
		settings = append(settings, s)
	}
	for _, name := range sortedKeys(rep.Selected) {
		if !hasDim(sp, name) {
			// The default candidate's settings the space does not vary.
			settings = append(settings, setting{Name: name, Selected: short(rep.Selected[name]), Default: "—", Note: "not a dimension of the space"})
		}
	}
	for _, name := range sortedKeys(rep.Fixed) {
		if _, ok := rep.Selected[name]; !ok && !hasDim(sp, name) {
			settings = append(settings, setting{Name: name, Selected: short(rep.Fixed[name]), Default: "—", Note: "the network's own, every run's"})
		}
	}
	if rep.Clipping != "" {
		settings = append(settings, setting{Name: "clipping", Selected: rep.Clipping + " (γ = " + short(rep.AutoClipGamma) + ")", Default: "—", Note: "every run's"})
	}
	return settings, hasDef
}

// numbers are the released numbers as the page prints them: the score
// and how it was taken, the test accuracy, ε (and the proved ε beside an
// approximate one), the ε table and the ledger's labels.
func (v *releaseView) numbers(rep *report) {
	if rep.ValidationScore != nil {
		v.Score = fixed4(*rep.ValidationScore)
		switch {
		case rep.ValidationCount != nil && rep.ValidationSize > 0:
			v.Score += fmt.Sprintf(" (private: a noisy count of %d over %d validation examples)", *rep.ValidationCount, rep.ValidationSize)
		case rep.Validation != "":
			v.Score += " (" + rep.Validation + " validation score)"
		}
	}
	if rep.TestAccuracy != nil {
		v.Test = fixed4(*rep.TestAccuracy)
	}
	v.Epsilon = "unbounded"
	if rep.Epsilon != nil {
		v.Epsilon = fixed4(*rep.Epsilon)
	}
	if rep.Approximate && rep.GenericEpsilon != nil {
		v.Generic = fixed4(*rep.GenericEpsilon)
	}
	for _, c := range rep.Components {
		row := component{Name: c.Name, Epsilon: "unbounded", Note: c.Note}
		if c.Epsilon != nil {
			row.Epsilon = fixed4(*c.Epsilon)
		}
		v.Comps = append(v.Comps, row)
	}
	for _, e := range rep.Ledger.Entries {
		v.Labels = append(v.Labels, e.Label)
	}
}

// figures draws the space's figures, the privacy figure and, when a score
// is released, the scores' figure.
func (v *releaseView) figures(rep *report, sp tuning.Space) error {
	var err error
	if v.Figures, err = spaceFigures(rep, sp); err != nil {
		return err
	}
	if v.Privacy, err = privacyFigure(rep); err != nil {
		return err
	}
	if rep.ValidationScore != nil || rep.TestAccuracy != nil {
		f, err := scoreFigure(rep)
		if err != nil {
			return err
		}
		v.Scores = &f
	}
	return nil
}

// releaseNotes says what is special about rep's release.
func releaseNotes(rep *report) []string {
	var n []string
	if rep.Failed != "" {
		n = append(n, "The tuning failed: "+rep.Failed)
	}
	if rep.Interrupted {
		n = append(n, "The tuning was interrupted: what it released is what it had when it stopped.")
	}
	if rep.Selected == nil {
		n = append(n, "Nothing was selected: no candidate is marked.")
	}
	if rep.NothingSelected {
		n = append(n, "The selection chose nothing (no run, or every run failed): the released model is one final run of the default among the candidates, marked as the selection below, and no validation score is released.")
	}
	if rep.Fallback {
		n = append(n, "No candidate passed the search: the selection is the first candidate, fixed in advance.")
	}
	if rep.IncludesDefault {
		n = append(n, "The published default was among the candidates.")
	}
	if rep.SelectionShare > 0 {
		n = append(n, "The released model is one final run of the selected settings on the whole training set; the selection spent its own share of ε.")
	}
	if rep.Subsample > 0 {
		n = append(n, "The selection ran on a secret Poisson subsample of the training set; the selected settings carried over to the final run.")
	}
	return n
}

// valueLabel formats x, a value of d: its choice for a categorical
// dimension (label when given), else the number.
func valueLabel(d tuning.Dim, x float64, label string) string {
	if label != "" {
		return label
	}
	if d.Choices != nil {
		if i := int(x); float64(i) == x && i >= 0 && i < len(d.Choices) {
			return d.Choices[i]
		}
	}
	return short(x)
}

// baselineValues returns where b's settings sit on each dimension of a
// space (a categorical dimension's choice index); false for a dimension b
// says nothing about, or for no b.
func baselineValues(b *job.Baseline) func(d tuning.Dim) (float64, bool) {
	return func(d tuning.Dim) (float64, bool) {
		if b == nil {
			return 0, false
		}
		switch d.Name {
		case tuning.LearningRate:
			return b.LearningRate, true
		case tuning.ClipNorm:
			return b.ClipNorm, true
		case tuning.BatchSize:
			return float64(b.BatchSize), true
		case tuning.Epochs:
			return float64(b.Epochs), true
		case tuning.Momentum:
			return b.Momentum, true
		case tuning.Network, tuning.LRSchedule:
			want := strings.TrimSuffix(b.Network, ".json")
			if d.Name == tuning.LRSchedule {
				want = "constant"
			}
			for i, c := range d.Choices {
				if strings.TrimSuffix(c, ".json") == want {
					return float64(i), true
				}
			}
		}
		return 0, false
	}
}

func hasDim(sp tuning.Space, name string) bool {
	for _, d := range sp.Dims {
		if d.Name == name {
			return true
		}
	}
	return false
}
