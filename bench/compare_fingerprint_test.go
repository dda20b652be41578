package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// A comparison without the comparison-wide options (clipping, the default
// among the candidates, a selection share) fingerprints its tunings and
// baselines byte for byte as before them: the cached rows committed under
// docs/report/data stay reused. Each fingerprint is recomputed from the
// committed compare.json's settings and checked against the cached row's.
func TestCompareFingerprintsOfCommittedRuns(t *testing.T) {
	for _, c := range []struct{ dir, entry, variant, file string }{
		{"compare-mnist", "grid", "", "grid-eps1-seed1.json"},
		{"compare-mnist", "randomstop", "tnb", "randomstop-tnb-eps2-seed3.json"},
		{"compare-mnist", "gp", "", "gp-eps8-seed1.json"},
		{"compare-mnist", "doubling", "", "doubling-eps4-seed5.json"},
		{"compare-cifar10", "grid", "", "grid-eps1-seed1.json"},
	} {
		dir := filepath.Join("..", "docs", "report", "data", c.dir)
		rep, err := ReadCompare(filepath.Join(dir, "compare.json"))
		if err != nil {
			t.Fatal(err)
		}
		want := cachedFingerprint(t, filepath.Join(dir, "runs", c.file))
		if got := rep.Settings.fingerprint(CompareEntry{Tuner: c.entry, Variant: c.variant}); got != want {
			t.Errorf("%s/%s: fingerprint %s, the cached row's %s", c.dir, c.file, got, want)
		}
		if rep.Settings.Default == nil {
			continue
		}
		def, cand := rep.Settings.baselineFingerprints(*rep.Settings.Default)
		if want := cachedFingerprint(t, filepath.Join(dir, "runs", "default-eps1-seed1.json")); def != want {
			t.Errorf("%s: the default's fingerprint %s, the cached row's %s", c.dir, def, want)
		}
		if want := cachedFingerprint(t, filepath.Join(dir, "runs", "candidates-eps1-seed1.json")); cand != want {
			t.Errorf("%s: the candidates' fingerprint %s, the cached runs' %s", c.dir, cand, want)
		}
	}
}

// cachedFingerprint is a cache file's settings_sha256.
func cachedFingerprint(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Fingerprint string `json:"settings_sha256"`
	}
	if err := json.Unmarshal(b, &c); err != nil || c.Fingerprint == "" {
		t.Fatalf("%s: %v", path, err)
	}
	return c.Fingerprint
}
