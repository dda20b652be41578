package main

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bench scatter refuses bad flags with one line and status 2 before any
// work, and in a tiny run prints and writes one row per image size and
// worker count.
func TestBenchScatter(t *testing.T) {
	out := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--seconds", "0"}, "--seconds 0 is outside (0, 600]"},
		{[]string{"--seconds", "NaN"}, "--seconds NaN is outside"},
		{[]string{"--seconds", "601"}, "--seconds 601 is outside"},
		{[]string{"--data-dirs", "imagenet=/x"}, `--data-dirs: unknown dataset "imagenet"`},
		{[]string{"--out", "/proc/x"}, "--out: /proc/x is not a writable directory"},
	} {
		code, msg := run(t, append([]string{"bench", "scatter", "--out", out}, c.args...)...)
		if code != 2 || !strings.Contains(msg, c.want) || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
			t.Errorf("%v: exit %d, output %q; want 2 and one line containing %q", c.args, code, msg, c.want)
		}
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("refused runs wrote %d files", len(entries))
	}
	code, msg := run(t, "bench", "scatter", "--seconds", "0.01", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, msg)
	}
	for _, want := range []string{"mnist  1×28×28", "cifar10  3×32×32", "CPU ms/image", "70000 images in", "60000 images in"} {
		if !strings.Contains(msg, want) {
			t.Errorf("output lacks %q:\n%s", want, msg)
		}
	}
	f, err := os.Open(filepath.Join(out, "scatter.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil || len(recs) < 3 || recs[0][0] != "dataset" || recs[1][1] != "1×28×28" {
		t.Fatalf("scatter.csv: %v %v", err, recs)
	}
}
