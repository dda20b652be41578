package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Settings outside a protocol's range are refused at once with one line
// that names the flag and its range, exit 2, before any trial: they used to
// fail with exit 1 after the trials started (a discrete Gaussian σ above
// the sampler's maximum, a clipping norm or sampling rate that overflows
// the float32 parameters), or after seconds of integration (a fixed or
// binary number of runs above tuning.MaxRuns); an ε of 1e300 is said to be
// above the largest ε accepted, not to be "not positive and finite".
func TestAuditRangesRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"audit", "score", "--score-noise", "1e300"}, "--score-noise 1e+300 is outside (0, 1e+09]"},
		{[]string{"audit", "dpsgd", "--clip-norm", "1e300"}, "--clip-norm 1e+300 is outside (0, 1e+06]"},
		{[]string{"audit", "tuner", "--repeat", "fixed", "--runs", "2", "--clip-norm", "1e7"}, "--clip-norm 1e+07 is outside (0, 1e+06]"},
		{[]string{"audit", "dpsgd", "--sampling-rate", "1e-300"}, "--sampling-rate 1e-300 is outside [1e-12, 1]"},
		{[]string{"audit", "tuner", "--repeat", "fixed", "--runs", "1073741824"}, "--runs 1073741824 is above 1048576"},
		{[]string{"audit", "tuner", "--repeat", "fixed", "--runs", "1048577"}, "--runs 1048577 is above 1048576"},
		{[]string{"audit", "reduced", "--repeat", "binary", "--binary-l", "1073741824", "--binary-s", "0.5"}, "--binary-l 1073741824 is above 1048576"},
		{[]string{"audit", "dpsgd", "--base-epsilon", "1e300"}, "--base-epsilon: ε = 1e+300 is not below 1e+300, the largest ε"},
		{[]string{"train", "--epsilon", "1e300"}, "ε = 1e+300 is not below 1e+300, the largest ε"},
		{[]string{"audit", "dpsgd", "--observe", "first"}, `--observe "first" is neither all nor last`},
		{[]string{"audit", "tuner", "--repeat", "fixed", "--runs", "2", "--observe", "last"}, "--observe applies to audit dpsgd only"},
		{[]string{"audit", "grid", "--repeat", "tnb"}, "--repeat does not apply to audit grid"},
		{[]string{"audit", "dpsgd", "--dataset", "mnist"}, "--dataset applies to audit natural (and, but for --lr, tuner) only"},
		{[]string{"audit", "tuner", "--repeat", "fixed", "--runs", "2", "--lr", "0.1"}, "--lr applies to audit natural (and, but for --lr, tuner) only"},
	} {
		args := append(tc.args, "--out", filepath.Join(t.TempDir(), "x"))
		if tc.args[0] == "audit" {
			args = append(args, "--trials", "100")
		}
		refusedAtOnce(t, args, tc.want)
	}
}

// audit one-run refuses what no one-run audit can run with, in one line
// and exit 2, before reading any data.
func TestAuditOneRunRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--canaries", "1"}, "--canaries 1: a one-run audit needs at least 2"},
		{[]string{"--confidence", "1"}, "--confidence 1 is outside (0, 1)"},
		{[]string{"--guesses", "10,2000"}, "--guesses 2000 is outside [1, 1000]"},
		{[]string{"--canary", "pixel"}, `--canary "pixel" is neither gradient nor input`},
		{[]string{"--canaries", "10001"}, "--canaries 10001 is above 10000, the size of mnist's test set"},
		{[]string{"--non-private"}, "--non-private: a one-run audit audits a private run"},
		{[]string{"--epsilon", "-1"}, "ε"},
		{[]string{"--noise-multiplier", "1e300"}, "noise multiplier 1e+300 is outside (0, 10000]"},
	} {
		args := append([]string{"audit", "one-run", "--out", filepath.Join(t.TempDir(), "x")}, tc.args...)
		refusedAtOnce(t, args, tc.want)
	}
}

// refusedAtOnce runs dptune with args and requires exit 2 with one line
// holding want, within 2 seconds.
func refusedAtOnce(t *testing.T, args []string, want string) {
	t.Helper()
	start := time.Now()
	code, out := run(t, args...)
	if code != 2 || !strings.Contains(out, want) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("%v: exit %d, output %q; want exit 2 and one line with %q", args, code, out, want)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("%v: refused only after %v", args, d)
	}
}
