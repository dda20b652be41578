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
