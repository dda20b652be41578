package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// account --accountant xiang-o reproduces a cell of Xiang et al.'s Table 4
// (binary ξ with L = 1000, s = 0.001; ε_B = 1, τ = 1, N = 500, δ = 1e-5:
// 5.40), with the documented JSON keys and the approximate label; bad
// combinations exit 2 with one line.
func TestAccountXiang(t *testing.T) {
	code, out := run(t, "account", "--accountant", "xiang-o", "--repeat", "binary", "--binary-l", "1000", "--binary-s", "0.001",
		"--base-epsilon", "1", "--sampling-rate", "1", "--steps", "500", "--json")
	var m map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &m) != nil {
		t.Fatalf("exit %d: %s", code, out)
	}
	if eps := m["epsilon"].(float64); math.Abs(eps-5.40) > 0.01 || m["approximate"] != true || m["mu"] == nil || m["order"] == nil {
		t.Errorf("%v", m)
	}
	for _, args := range [][]string{
		{"account", "--accountant", "xiang-o", "--gdp-mu", "1"},
		{"account", "--accountant", "xiang-o", "--repeat", "fixed", "--runs", "3", "--gdp-mu", "1", "--steps", "5"},
		{"account", "--accountant", "xiang-g", "--repeat", "fixed", "--runs", "3", "--sampling-rate", "0.1", "--steps", "5"},
		{"account", "--accountant", "xiang-o", "--repeat", "fixed", "--runs", "0", "--gdp-mu", "1"},
		{"account", "--accountant", "xiang-o", "--repeat", "binary", "--binary-l", "10", "--binary-s", "2", "--gdp-mu", "1"},
		{"account", "--repeat", "binary", "--binary-l", "10", "--binary-s", "0.1", "--noise-multiplier", "1", "--sampling-rate", "0.1", "--steps", "5"},
		{"account", "--accountant", "rdp", "--gdp-mu", "1", "--noise-multiplier", "1", "--sampling-rate", "0.1", "--steps", "5"},
	} {
		if code, out := run(t, args...); code != 2 || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%v: exit %d: %s", args, code, out)
		}
	}
}

// tune --accountant xiang-o: random-stop with public validation, σ
// calibrated by Algorithm 3 to the total ε (approximate, labelled), the
// proved Papernot–Steinke ε of the same run beside it (larger); refused
// with private scores or a budget file.
func TestTuneXiangAccountant(t *testing.T) {
	private, public := writeMNISTDir(t, 300, 30, -1), writeMNISTDir(t, 100, 10, -1)
	space := writeFile(t, "small.json", `{"name": "small", "dims": [{"name": "learning_rate", "values": [0.5]}]}`)
	out := t.TempDir() + "/x"
	code, text := run(t, "tune", "--tuner", "randomstop", "--accountant", "xiang-o", "--validation", "public", "--public-val-dir", public, "--space", space,
		"--data-dir", private, "--nominal-size", "300", "--batch-size", "50", "--epochs", "1", "--mean-runs", "2", "--epsilon", "4",
		"--seed", "1", "--out", out)
	if code != 0 || !strings.Contains(text, "APPROXIMATE") {
		t.Fatalf("exit %d: %s", code, text)
	}
	rep := readReport(t, out+"/report.json")
	var eps, generic float64
	json.Unmarshal(rep["epsilon"], &eps)
	json.Unmarshal(rep["papernot_steinke_epsilon"], &generic)
	if string(rep["approximate"]) != "true" || string(rep["accountant"]) != `"xiang-o"` || eps > 4 || eps < 3.99 || !(generic > eps) ||
		!strings.Contains(string(rep["ledger"]), "gaussian_select") {
		t.Errorf("ε %v, Papernot–Steinke %v, report %s / %s / %s", eps, generic, rep["approximate"], rep["accountant"], rep["ledger"])
	}
	for _, args := range [][]string{
		{"tune", "--accountant", "xiang-o", "--data-dir", private},
		{"tune", "--accountant", "xiang-o", "--validation", "public", "--public-val-dir", public, "--data-dir", private, "--budget", "b.budget"},
		{"tune", "--accountant", "moments", "--data-dir", private},
	} {
		if code, out := run(t, args...); code != 2 || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%v: exit %d: %s", args, code, out)
		}
	}
}
