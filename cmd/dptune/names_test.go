package main

import (
	"strings"
	"testing"
)

// tune's help lists each tuner's example and the built-in spaces from the
// registries, as it did when they were written out here.
func TestTuneHelpFromRegistries(t *testing.T) {
	code, out := run(t, "tune", "--help")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, want := range []string{
		"  dptune tune --epsilon 8 --out out/tune\n  dptune tune --tuner gp --space mnist-dphypo --mean-runs 10 --epsilon 8 --out out/gp\n",
		"  dptune tune --tuner doubling --space mnist-doubling --epsilon 8 --out out/doubling\n",
		"  dptune tune --tuner grid --space mnist-doubling --epochs 1 --epsilon 8 --out out/grid\n",
		"search space: mnist-dphypo, cifar10-dphypo, mnist-doubling",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks\n%s\n---\n%s", want, out)
		}
	}
}

// bench compare takes the doubling tuner's settings as the flags it always
// had, with their defaults, and checks them before any work.
func TestBenchCompareTunerFlags(t *testing.T) {
	_, out := run(t, "bench", "compare", "--help")
	for _, want := range []string{"--doubling-share float", "doubling: fraction of each budget the search spends at its iteration cap (default 0.5)",
		"--part-epochs int", "doubling: epochs of each part run (default 1)", "--partitions int", "doubling: disjoint training parts k (default 10)",
		"--granularity float", "doubling: utility granularity g (default 0.01)"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	code, out := run(t, "bench", "compare", "--doubling-share", "1", "--out", t.TempDir())
	if code != 2 || !strings.Contains(out, "--doubling-share 1 is outside (0, 1)") {
		t.Errorf("--doubling-share 1: exit %d, %s", code, out)
	}
}
