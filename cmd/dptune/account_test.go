package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
)

var accountBase = []string{"account", "--noise-multiplier", "1.1", "--sampling-rate", "0.0042667", "--steps", "14063"}

// Bad input to account: one line, exit status 2.
func TestAccountBadInputExit2(t *testing.T) {
	base := []string{"account", "--sampling-rate", "0.01", "--steps", "100"}
	cases := [][]string{
		append(base, "--noise-multiplier", "0"),
		append(base, "--noise-multiplier", "-1"),
		{"account", "--sampling-rate", "0", "--steps", "100", "--noise-multiplier", "1"},
		{"account", "--sampling-rate", "1.5", "--steps", "100", "--noise-multiplier", "1"},
		append(base, "--noise-multiplier", "1", "--delta", "0"),
		append(base, "--noise-multiplier", "1", "--delta", "1"),
		{"account", "--sampling-rate", "0.01", "--steps", "-5", "--noise-multiplier", "1"},
		append(base, "--noise-multiplier", "1", "--repeat", "tnb", "--eta", "-1", "--mean-runs", "10"),
		append(base, "--noise-multiplier", "1", "--repeat", "tnb", "--gamma", "1"),
		append(base, "--noise-multiplier", "1", "--repeat", "tnb", "--gamma", "0"),
		append(base, "--noise-multiplier", "1", "--repeat", "tnb"),
		append(base, "--noise-multiplier", "1", "--repeat", "tnb", "--mean-runs", "1"),
		append(base, "--noise-multiplier", "1", "--repeat", "poisson"),
		append(base, "--noise-multiplier", "1", "--repeat", "poisson", "--mean-runs", "0.5"),
		append(base, "--noise-multiplier", "1", "--repeat", "uniform", "--mean-runs", "3"),
		append(base, "--noise-multiplier", "1", "--repeat", "tnb", "--mean-runs", "10", "--adaptive-ratio", "0.5/2"),
		append(base, "--noise-multiplier", "1", "--repeat", "tnb", "--mean-runs", "10", "--adaptive-ratio", "two"),
		append(base, "--noise-multiplier", "1", "--repeat", "poisson", "--mean-runs", "10", "--adaptive-ratio", "2/1"),
		append(base, "--noise-multiplier", "1", "--repeat", "tnb", "--mean-runs", "10", "--accountant", "pld"),
		append(base, "--noise-multiplier", "1", "--mean-runs", "10"),
		append(base, "--noise-multiplier", "1", "--accountant", "moments"),
		append(base, "--noise-multiplier", "1", "--epsilon", "3"),
		base,
		append(base, "--epsilon", "0"),
		append(base, "--epsilon", "1e-9"),
		{"account", "--sampling-rate", "0.01", "--steps", "100", "--epochs", "2", "--noise-multiplier", "1"},
	}
	for _, args := range cases {
		code, out := run(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%v: exit %d, output %q; want 2 and one line", args, code, out)
		}
	}
}

func accountJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	code, out := run(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("%v: %v in %q", args, err, out)
	}
	return m
}

// account's figures are the accounting package's, under the documented keys.
func TestAccountJSON(t *testing.T) {
	for _, name := range []string{"rdp", "pld", "gdp"} {
		m := accountJSON(t, append(accountBase, "--accountant", name)...)
		acc, _ := job.Accountant(name, true)
		g, err := acc.Epsilon(accounting.DPSGD(1.1, 0.0042667, 14063), 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		for key, want := range map[string]any{"epsilon": g.Epsilon, "delta": 1e-5, "accountant": name,
			"noise_multiplier": 1.1, "sampling_rate": 0.0042667, "steps": 14063.0} {
			if m[key] != want {
				t.Errorf("%s: %s = %v, want %v", name, key, m[key], want)
			}
		}
		if _, has := m["order"]; has != (name == "rdp") {
			t.Errorf("%s: order present = %v", name, has)
		}
	}
	// Calibrated σ meets the target; calibrated steps too.
	m := accountJSON(t, "account", "--epsilon", "3", "--sampling-rate", "0.0042667", "--epochs", "10")
	if e := m["epsilon"].(float64); e > 3 || e < 2.999 || m["steps"] != 2350.0 {
		t.Errorf("calibrated σ: %v", m)
	}
	m = accountJSON(t, "account", "--epsilon", "3", "--noise-multiplier", "1.1", "--sampling-rate", "0.0042667")
	if e := m["epsilon"].(float64); e > 3 || e < 2.99 {
		t.Errorf("calibrated steps: %v", m)
	}
	// Tuning: the pipeline costs more than one run, and the adaptive
	// version more than the plain one.
	tnb := accountJSON(t, append(accountBase, "--repeat", "tnb", "--eta", "1", "--mean-runs", "10")...)
	ada := accountJSON(t, append(accountBase, "--repeat", "tnb", "--eta", "1", "--mean-runs", "10", "--adaptive-ratio", "2/0.75")...)
	poi := accountJSON(t, append(accountBase, "--repeat", "poisson", "--mean-runs", "10")...)
	base := tnb["tuning"].(map[string]any)["base_epsilon"].(float64)
	rep, _ := accounting.TNBWithMean(1, 10)
	want, _ := accounting.RDP{}.Epsilon(accounting.RepeatAndSelect{Event: accounting.DPSGD(1.1, 0.0042667, 14063), Repetitions: rep}, 1e-5)
	if math.Abs(tnb["epsilon"].(float64)-want.Epsilon) > 1e-12 || !(base < tnb["epsilon"].(float64)) ||
		!(ada["epsilon"].(float64) > tnb["epsilon"].(float64)) || !(poi["epsilon"].(float64) > base) {
		t.Errorf("tuning: tnb %v, adaptive %v, poisson %v, base %v, want tnb %v", tnb["epsilon"], ada["epsilon"], poi["epsilon"], base, want.Epsilon)
	}
}
