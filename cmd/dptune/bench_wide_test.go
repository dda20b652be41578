package main

import (
	"path/filepath"
	"testing"
	"time"
)

// bench compare's comparison-wide options and bench seeds' clipping and
// settings are refused, when bad, before any work with one line, exit 2,
// saying why: the job's own reason where it is the job's to refuse.
func TestBenchWideOptionsRefused(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none")
	out := func() string { return t.TempDir() }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "compare", "--selection-share", "1", "--data-dir", missing, "--out", out()}, "--selection-share 1 is outside (0, 1)"},
		{[]string{"bench", "compare", "--selection-share", "0", "--data-dir", missing, "--out", out()}, "--selection-share 0 is outside (0, 1)"},
		{[]string{"bench", "compare", "--selection-share", "-0.5", "--data-dir", missing, "--out", out()}, "--selection-share -0.5 is outside (0, 1)"},
		{[]string{"bench", "compare", "--clipping", "clipped", "--data-dir", missing, "--out", out()}, `--clipping "clipped": want flat or automatic`},
		{[]string{"bench", "compare", "--auto-clip-gamma", "0.1", "--data-dir", missing, "--out", out()}, "--auto-clip-gamma is the stability constant of --clipping automatic"},
		{[]string{"bench", "compare", "--default-weight", "0.5", "--data-dir", missing, "--out", out()}, "--default-weight needs --include-default"},
		{[]string{"bench", "compare", "--include-default", "--default-weight", "1", "--data-dir", missing, "--out", out()}, "--default-weight 1 is outside (0, 1)"},
		{[]string{"bench", "compare", "--clipping", "automatic", "--model", "scatter-linear-mnist", "--space", "../../examples/spaces/compare-scatter-mnist.json", "--data-dir", missing, "--out", out()},
			"automatic clipping takes no clipping norm, but search space compare-scatter-mnist"},
		{[]string{"bench", "compare", "--include-default", "--model", "tb-mnist", "--baselines=false", "--data-dir", missing, "--out", out()}, "tb-mnist has no published settings on mnist"},
		{[]string{"bench", "compare", "--include-default", "--tuners", "gp", "--model", "scatter-linear-mnist", "--data-dir", missing, "--out", out()}, "the gp tuner cannot take the default among its candidates"},
		{[]string{"bench", "compare", "--selection-share", "0.25", "--tuners", "doubling", "--model", "scatter-linear-mnist", "--data-dir", missing, "--out", out()}, "it takes no selection share"},
		{[]string{"bench", "seeds", "--models", "scatter-linear-mnist", "--clipping", "auto", "--data-dir", missing, "--out", out()}, `--clipping "auto": want flat or automatic`},
		{[]string{"bench", "seeds", "--models", "tb-mnist", "--data-dir", missing, "--out", out()}, "tb-mnist has no published settings on mnist (give them with --default-settings"},
		{[]string{"bench", "seeds", "--models", "tb-mnist", "--default-settings", "batch_size=256", "--default-source", "mine", "--data-dir", missing, "--out", out()}, "--default-settings needs all of"},
	} {
		expectExit2(t, 5*time.Second, c.want, c.args...)
	}
}
