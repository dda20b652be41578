package bench

import (
	"encoding/json"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/tuning"
)

// compare.json's settings keep their layout (they fingerprint the cache of
// finished tunings): the GP tuner's, then the doubling tuner's under
// "doubling", with the comparison's defaults k = 10, g = 0.01, half the
// budget to the search and one epoch per part run.
func TestCompareSettingsLayout(t *testing.T) {
	var cfg CompareConfig
	b, err := json.Marshal(cfg.settings())
	if err != nil {
		t.Fatal(err)
	}
	want := `"gp":{"MaxRatio":2,"MinRatio":0.75,"Tau":0.1,"Beta":1},"doubling":{"partitions":10,"search_share_of_budget":0.5,"granularity":0.01,"u0":0,"max_iterations":0,"part_epochs":1}}`
	if !strings.HasSuffix(string(b), want) {
		t.Errorf("settings:\n%s\nwant the suffix\n%s", b, want)
	}
	var back CompareSettings
	if err := json.Unmarshal(b, &back); err != nil || back.Doubling.SearchShare != 0.5 || back.Doubling.PartEpochs != 1 {
		t.Errorf("read back: %+v, %v", back.tunerSettings, err)
	}
}

// Every entry's spec carries its own tuner's options only (a tuner refuses
// any other): the doubling tuner's ϵ₀ is the search's share of the budget
// over its cap T_max = ⌈5·log₂(1/g)⌉ = 34 at g = 0.01, and its part scores
// are cached per tuner and seed; the GP tuner's are the paper's.
func TestCompareSpecOptions(t *testing.T) {
	cfg := CompareConfig{Space: tuning.Space{Name: "s", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1}}}},
		MeanRuns: 10, Options: tuning.Values{"doubling-share": 0.25, "partitions": 4}, Dir: "d"}
	seen := map[string]bool{}
	for _, e := range CompareEntries {
		spec, err := compareSpec(cfg, e, 8, 3)
		if err != nil {
			t.Fatal(err)
		}
		tu, err := tuning.Lookup(e.Tuner)
		if err != nil {
			t.Fatal(err)
		}
		if err := tuning.CheckOptions(tu, tuning.Spec{Options: spec.Options}); err != nil {
			t.Errorf("%s: %v", e.ID(), err)
		}
		seen[e.Tuner] = true
		switch e.Tuner {
		case tuning.DoublingName:
			o := tuning.DoublingOptionsOf(tuning.Spec{Options: spec.Options})
			if math.Abs(o.Epsilon0-0.25*8/34) > 1e-15 || o.Partitions != 4 || o.PartEpochs != 1 || o.Granularity != 0.01 ||
				o.Cache != filepath.Join("d", "curator", e.Tuner+"-seed3.csv") {
				t.Errorf("%s: %+v", e.ID(), o)
			}
		case tuning.GPName:
			if tuning.GPOptionsOf(tuning.Spec{Options: spec.Options}) != tuning.DefaultGPOptions() || len(spec.Options) != 4 {
				t.Errorf("%s: GP options %v", e.ID(), spec.Options)
			}
		}
	}
	if !seen[tuning.DoublingName] || !seen[tuning.GPName] {
		t.Errorf("entries %v lack the doubling or the GP tuner", CompareEntries)
	}
}

// The report reads its outputs in the order it always has, and names them
// so when it finds none.
func TestReportKinds(t *testing.T) {
	var names []string
	for _, k := range reportKinds {
		names = append(names, k.name)
	}
	if want := []string{"compare.json", "seeds.json", "persample", "tuners.json", "doubling.json", "audit-figures.json", "vote.json"}; !slices.Equal(names, want) {
		t.Errorf("report kinds %v, want %v", names, want)
	}
	_, err := WriteReport(ReportConfig{Inputs: []string{t.TempDir()}, Out: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "(compare.json, seeds.json, tuners.json, doubling.json, audit-figures.json, vote.json, persample JSON)") {
		t.Errorf("WriteReport on nothing: %v", err)
	}
}
