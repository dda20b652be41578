package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// An audit's trial file is bound to its protocol: the reproduction
// (a μ = 3 audit, then μ = 0.2 into the same directory, which used to
// reuse the μ = 3 trials and report a violation) is refused with one line
// naming the field, exit 2, before any trial; the same settings resume; a
// different trial count (optional stopping), δ, confidence or repetition
// distribution is refused; so is a file of the earlier format.
func TestAuditTrialsBoundToProtocol(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "audit")
	base := []string{"audit", "reduced", "--repeat", "fixed", "--runs", "1", "--trials", "400", "--out", dir}
	if code, out := run(t, append(base, "--gdp-mu", "3")...); code != 0 {
		t.Fatalf("first audit: exit %d: %s", code, out)
	}
	csv := filepath.Join(dir, "trials.csv")
	orig, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		field string
	}{
		{[]string{"--gdp-mu", "0.2"}, "Mu=3, not 0.2"},
		{[]string{"--gdp-mu", "3", "--trials", "800"}, "trials=400, not 800"},
		{[]string{"--gdp-mu", "3", "--trials", "200"}, "trials=400, not 200"},
		{[]string{"--gdp-mu", "3", "--delta", "1e-6"}, "Delta=0.00001, not 0.000001"},
		{[]string{"--gdp-mu", "3", "--confidence", "0.9"}, "Confidence=0.95, not 0.9"},
		{[]string{"--gdp-mu", "3", "--runs", "2"}, "Repetitions.l=1, not 2"},
		{[]string{"--gdp-mu", "3", "--seed", "2"}, "seed=1, not 2"},
	} {
		start := time.Now()
		code, out := run(t, append(base, tc.args...)...)
		if code != 2 || !strings.Contains(out, tc.field) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%v: exit %d, output %q; want exit 2 and one line naming %q", tc.args, code, out, tc.field)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%v: refused only after %v", tc.args, d)
		}
	}
	if now, _ := os.ReadFile(csv); string(now) != string(orig) {
		t.Error("a refused audit changed the trial file")
	}
	if code, out := run(t, append(base, "--gdp-mu", "3")...); code != 0 {
		t.Errorf("the same audit again: exit %d: %s", code, out)
	}

	// A trial file of the earlier format records no protocol: refused.
	old := filepath.Join(t.TempDir(), "old")
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "trials.csv"), []byte("# dptune audit seed=1 trials=400\ntrial,b,stat\n0,1,2.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out := run(t, "audit", "reduced", "--repeat", "fixed", "--runs", "1", "--trials", "400", "--gdp-mu", "3", "--out", old)
	if code != 2 || !strings.Contains(out, "earlier dptune") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("old-format trial file: exit %d, output %q", code, out)
	}
}

// Hostile audit settings end with one line and exit 2 before any work:
// trial counts that cannot fit in memory (they panicked in makeslice or ran
// out of memory) or below 100, a canary set of a billion examples, a confidence of 0
// and a negative size (both silently replaced before), no protocol.
func TestAuditHostileSettingsExit2(t *testing.T) {
	out := t.TempDir()
	for _, args := range [][]string{
		{"audit", "reduced", "--repeat", "fixed", "--runs", "1", "--trials", "9223372036854775807"},
		{"audit", "reduced", "--repeat", "fixed", "--runs", "1", "--trials", "10000000000"},
		{"audit", "reduced", "--repeat", "fixed", "--runs", "1", "--trials", "100000001"},
		{"audit", "reduced", "--repeat", "fixed", "--runs", "1", "--trials", "99"},
		{"bench", "audit", "--dpsgd-trials", "99"},
		{"audit", "dpsgd", "--size", "1000000000", "--trials", "100"},
		{"audit", "dpsgd", "--size", "60001", "--trials", "100"},
		{"audit", "dpsgd", "--size", "-1", "--trials", "100"},
		{"audit", "dpsgd", "--size", "0", "--trials", "100"},
		{"audit", "reduced", "--repeat", "fixed", "--runs", "1", "--confidence", "0"},
		{"audit", "reduced", "--repeat", "fixed", "--runs", "1", "--confidence", "1"},
		{"audit"},
		{"audit", "reduced", "dpsgd"},
		{"bench", "audit", "--trials", "9223372036854775807"},
		{"bench", "audit", "--dpsgd-trials", "10000000000"},
		{"bench", "audit", "--dpsgd-steps", "2000000000"},
		{"bench", "audit", "--base-epsilons", "0"},
		{"bench", "audit", "--base-epsilons", "1e301"},
	} {
		args = append(args, "--out", filepath.Join(out, "x"))
		start := time.Now()
		code, text := run(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(text), "\n") != 0 {
			t.Errorf("%v: exit %d, output %q; want exit 2 and one line", args, code, text)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%v: refused only after %v", args, d)
		}
	}
}

// Settings that used to run for minutes ignoring Ctrl-C, fill the memory,
// or fail only after loading data and calibrating: each is refused at once
// with one line and exit 2, or (huge noise) answered at once.
func TestHugeParametersAnswerFast(t *testing.T) {
	out := t.TempDir()
	for _, args := range [][]string{
		{"account", "--accountant", "xiang-o", "--repeat", "fixed", "--runs", "2", "--gdp-mu", "100"},
		{"account", "--accountant", "xiang-o", "--repeat", "fixed", "--runs", "2", "--gdp-mu", "1e300"},
		{"account", "--accountant", "xiang-o", "--repeat", "fixed", "--runs", "2", "--gdp-mu", "1e5"},
		{"account", "--accountant", "xiang-o", "--repeat", "fixed", "--runs", "2", "--noise-multiplier", "1e-6", "--sampling-rate", "1", "--steps", "10"},
		{"audit", "reduced", "--repeat", "tnb", "--mean-runs", "1e15", "--trials", "100", "--out", out},
		{"audit", "reduced", "--repeat", "fixed", "--runs", "2", "--gdp-mu", "100", "--trials", "100", "--out", out},
		{"audit", "dpsgd", "--noise-multiplier", "1e300", "--trials", "100", "--out", out},
		{"tune", "--tuner", "randomstop", "--runs-dist", "tnb", "--mean-runs", "1e9", "--out", out},
		{"tune", "--tuner", "randomstop", "--mean-runs", "1e6", "--out", out},
		{"tune", "--tuner", "gp", "--mean-runs", "701", "--out", out},
	} {
		start := time.Now()
		code, text := run(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(text), "\n") != 0 {
			t.Errorf("%v: exit %d, output %q; want exit 2 and one line", args, code, text)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%v: refused only after %v", args, d)
		}
	}
	start := time.Now()
	res := accountJSON(t, "account", "--noise-multiplier", "1e300", "--sampling-rate", "0.0042667", "--steps", "1000", "--accountant", "pld")
	if res["epsilon"] != 0.0 {
		t.Errorf("σ = 1e300: ε = %v, want 0", res["epsilon"])
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("σ = 1e300: answered after %v", d)
	}
}

// A TNB shape that no γ fits is blamed on --eta, not on --mean-runs.
func TestEtaMessageNamesEta(t *testing.T) {
	for _, args := range [][]string{
		{"tune", "--tuner", "randomstop", "--runs-dist", "tnb", "--eta", "1e300", "--mean-runs", "20"},
		{"account", "--noise-multiplier", "1", "--sampling-rate", "0.01", "--steps", "10", "--repeat", "tnb", "--eta", "1e300", "--mean-runs", "5"},
		{"audit", "reduced", "--repeat", "tnb", "--eta", "1e300", "--mean-runs", "5", "--out", t.TempDir()},
	} {
		code, text := run(t, args...)
		if code != 2 || !strings.HasPrefix(text, "dptune: --eta 1e+300") {
			t.Errorf("%v: exit %d, %q; want exit 2 and a message that starts with --eta", args, code, text)
		}
	}
	// With a Poisson number of runs (random-stop's default) --eta has no
	// meaning: refused rather than silently ignored.
	if code, text := run(t, "tune", "--tuner", "randomstop", "--eta", "1e300", "--out", t.TempDir()); code != 2 || !strings.HasPrefix(text, "dptune: --eta is the shape of --runs-dist tnb") {
		t.Errorf("tune --eta with Poisson runs: exit %d, %q; want exit 2 naming --eta", code, text)
	}
}
