package main

import (
	"testing"
)

// The settings' digest — in the workflow ID and bound into the wrapped
// invocation key — changes with every setting that affects the release and
// with none of the flags that only say where the jobs run: a second tuning
// into the same --out with another ε (or tuner, space, δ, runs
// distribution, data) is another workflow with a fresh key, while a rerun
// with the same settings resumes.
func TestSettingsDigest(t *testing.T) {
	base := []string{"--tuner", "randomstop", "--dataset", "mnist", "--epsilon", "8", "--out", "o"}
	digest := func(extra ...string) [32]byte {
		t.Helper()
		cmd := newTuneCmd()
		if err := cmd.ParseFlags(append(append([]string(nil), base...), extra...)); err != nil {
			t.Fatal(err)
		}
		return settingsDigest(cmd, "tune")
	}
	first := digest()
	if digest() != first {
		t.Fatal("the same settings gave two digests")
	}
	for _, other := range [][]string{{"--epsilon", "4"}, {"--delta", "1e-6"}, {"--tuner", "gp"}, {"--mean-runs", "7"},
		{"--runs-dist", "poisson"}, {"--space", "other.json"}, {"--data-dir", "/elsewhere"}, {"--seed", "3"}} {
		if digest(other...) == first {
			t.Errorf("%v did not change the digest", other)
		}
	}
	for _, same := range [][]string{{"--runner", "temporal"}, {"--temporal-address", "h:1"}, {"--task-queue", "q"},
		{"--temporal-key", "k"}, {"--heartbeat-timeout", "5s"}, {"--temporal-namespace", "n"}} {
		if digest(same...) != first {
			t.Errorf("the runner flag %v changed the digest", same)
		}
	}
	cmd := newTuneCmd()
	cmd.ParseFlags(base)
	if settingsDigest(cmd, "audit") == first {
		t.Error("the command is not in the digest")
	}
}
