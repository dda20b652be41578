package bench

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/tuning"
)

// A comparison's comparison-wide options reach every tuner's job.Tune
// (each row states them, as its tuning's report does); a tuner that
// refuses one is reported not run with the job's reason; the default row
// clips as the comparison does; the tables name the options.
func TestCompareWideOptions(t *testing.T) {
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.5, 0.05}}}}
	cfg := CompareConfig{Data: tinySource(600), Space: space, Entries: []CompareEntry{{Tuner: tuning.GridName}, {Tuner: "randomstop", Variant: "tnb"}, {Tuner: "gp"}, {Tuner: tuning.DoublingName}},
		Budgets: []float64{8}, Delta: 1e-5, Seeds: []uint64{1}, Epochs: 1, BatchSize: 50, MeanRuns: 2, ValSize: 100, ScoreNoise: 5, GridScoreNoise: 5,
		Options: tuning.Values{"partitions": 2}, Baselines: true, ReferenceSeeds: 0,
		Default:  &job.TrainDefaults{BatchSize: 50, Epochs: 1, LearningRate: 0.5, Momentum: 0, ClipNorm: 0.5, Source: "a test's"},
		Clipping: dpsgd.AutomaticClipping, IncludeDefault: true, DefaultWeight: 0.5, SelectionShare: 0.25, Dir: t.TempDir()}
	infeasible, err := CheckCompare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	refused := map[string]string{}
	for _, x := range infeasible {
		if !x.Refused {
			t.Errorf("infeasible, not refused: %+v", x)
		}
		refused[x.Tuner] = x.Reason
	}
	if len(refused) != 2 || !strings.Contains(refused["gp"], "cannot take the default among its candidates") || !strings.Contains(refused[tuning.DoublingName], "selection share") {
		t.Fatalf("refused: %v", refused)
	}
	rep, err := Compare(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := rep.Settings
	if s.Clipping != "automatic" || s.AutoClipGamma != dpsgd.DefaultAutoClipGamma || !s.IncludeDefault || s.DefaultWeight != 0.5 || s.SelectionShare != 0.25 || s.DefaultCandidate == nil || *s.DefaultCandidate != *cfg.Default {
		t.Errorf("settings %+v", s)
	}
	ran := map[string]CompareRow{}
	for _, r := range rep.Rows {
		ran[r.Tuner] = r
	}
	for _, tu := range []string{tuning.GridName, "randomstop"} {
		r, ok := ran[tu]
		if !ok || r.Clipping != "automatic" || !r.IncludesDefault || r.SelectionShare != 0.25 || len(r.EpsilonComponents) < 2 || !r.Released || r.Runs < 2 {
			t.Errorf("%s: %+v", tu, r)
		}
	}
	if g := ran[tuning.GridName]; g.Runs != 4 || g.TrainingEpochs != 4 { // two candidates, the default, the final run: one epoch each
		t.Errorf("grid: %d runs, %v epochs", g.Runs, g.TrainingEpochs)
	}
	for _, tu := range []string{"gp", tuning.DoublingName} {
		if _, ok := ran[tu]; ok {
			t.Errorf("%s ran, refused", tu)
		}
	}
	def := ran[BaselineDefault]
	if def.Clipping != "automatic" || def.Selected[tuning.LearningRate] != 0.25 || def.Selected[tuning.ClipNorm] != 0 || !def.Released {
		t.Errorf("default row %+v", def)
	}
	var md strings.Builder
	WriteCompareMarkdown(&md, rep)
	for _, want := range []string{"Comparison-wide options, given to every tuner: automatic clipping (γ = 0.01), the default among the candidates (random-stop's weight 0.5), selection share 0.25.",
		"| gp | not run |", "| doubling | not run |", "\"not run\": the tuner refuses a comparison-wide option (gp: the gp tuner cannot take the default among its candidates",
		"η = 0.25 (η·C: the published η = 0.5 at C = 0.5), momentum 0, automatic clipping (γ = 0.01)", "| default (one run of published settings, automatic clipping: η·C) |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("compare.md lacks %q:\n%s", want, md.String())
		}
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var section strings.Builder
	if _, err := compareSection(&section, found{"compare.json", "compare.json", raw}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(section.String(), "## Every tuner at one total budget on mnist, with automatic clipping (γ = 0.01), the default among the candidates (random-stop's weight 0.5), selection share 0.25 (") {
		t.Errorf("the section's title names no options:\n%s", section.String()[:300])
	}
	// Beside a plain comparison of the same dataset, the answer table has
	// a row per comparison and budget, the options named.
	plain := *rep
	plain.Settings.Clipping, plain.Settings.AutoClipGamma, plain.Settings.IncludeDefault, plain.Settings.DefaultCandidate, plain.Settings.DefaultWeight, plain.Settings.SelectionShare = "", 0, false, nil, 0, 0
	plainRaw, err := json.Marshal(plain)
	if err != nil {
		t.Fatal(err)
	}
	reps, err := answerReports([]found{{kind: "compare.json", path: "a/compare.json", raw: plainRaw}, {kind: "compare.json", path: "b/compare.json", raw: raw}})
	if err != nil {
		t.Fatal(err)
	}
	var answer strings.Builder
	writeAnswer(&answer, reps, answerRows(reps))
	for _, want := range []string{"| mnist | 8 |", "| mnist, automatic clipping (γ = 0.01), the default among the candidates (random-stop's weight 0.5), selection share 0.25 | 8 |", "; every tuner with automatic clipping"} {
		if !strings.Contains(answer.String(), want) {
			t.Errorf("the answer table lacks %q:\n%s", want, answer.String())
		}
	}
}

// A plain comparison's settings carry none of the options' fields; with
// the default among the candidates, a tuning's fingerprint depends on the
// default's settings (and on nothing of the default row's without it).
func TestCompareWideFingerprints(t *testing.T) {
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.5, 0.05}}}}
	cfg := CompareConfig{Data: tinySource(600), Space: space, Budgets: []float64{8}, Seeds: []uint64{1}, Default: &job.TrainDefaults{BatchSize: 50, Epochs: 1, LearningRate: 0.5, ClipNorm: 1, Source: "a"}}
	b, _ := json.Marshal(cfg.settings())
	for _, k := range []string{"clipping", "auto_clip_gamma", "include_default", "default_candidate", "default_weight", "selection_share"} {
		if strings.Contains(string(b), `"`+k+`"`) {
			t.Errorf("a plain comparison's settings name %s: %s", k, b)
		}
	}
	e := CompareEntry{Tuner: tuning.GridName}
	other := cfg
	other.Default = &job.TrainDefaults{BatchSize: 50, Epochs: 1, LearningRate: 0.25, ClipNorm: 1, Source: "a"}
	if cfg.settings().fingerprint(e) != other.settings().fingerprint(e) {
		t.Error("without the default among the candidates a tuning depends on the default row's settings")
	}
	cfg.IncludeDefault, other.IncludeDefault = true, true
	if cfg.settings().fingerprint(e) == other.settings().fingerprint(e) {
		t.Error("with the default among the candidates a tuning does not depend on its settings")
	}
	for _, bad := range []CompareConfig{{SelectionShare: 1}, {SelectionShare: -0.5}, {DefaultWeight: 0.5}, {Clipping: 7}, {AutoClipGamma: 0.1}} {
		bad.Data, bad.Space, bad.Budgets, bad.Entries = cfg.Data, space, []float64{8}, []CompareEntry{e}
		if _, err := CheckCompare(context.Background(), bad); !errors.Is(err, job.ErrInvalid) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// A default's label names the comparison in the report but changes no
// run: the tunings' and the baselines' fingerprints are those without it.
func TestDefaultLabelNamesButFingerprintsNothing(t *testing.T) {
	s := CompareSettings{Dataset: "d", Model: "m", Budgets: []float64{1}, Delta: 1e-5}
	labelled := s
	labelled.DefaultLabel = "mis-set: η 8× too small"
	if got, want := labelled.Options(), "the default mis-set: η 8× too small"; got != want {
		t.Errorf("Options() = %q, want %q", got, want)
	}
	e := CompareEntry{Tuner: "t"}
	if labelled.fingerprint(e) != s.fingerprint(e) {
		t.Error("the label changes a tuning's fingerprint")
	}
	var d job.TrainDefaults
	ld, lc := labelled.baselineFingerprints(d)
	sd, sc := s.baselineFingerprints(d)
	if ld != sd || lc != sc {
		t.Error("the label changes a baseline's fingerprint")
	}
}
