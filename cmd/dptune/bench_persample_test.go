package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeTorchReference writes a fake interpreter that imports torch and runs
// scripts with /bin/sh, and a fake torch_reference.py that writes canned
// figures in the reference's JSON (tb-mnist at batch 32: non-private 16,000
// examples/s, torch.func 8,000, hooks 3,000) to its --out-prefix.json.
func fakeTorchReference(t *testing.T) (python, ref string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	python = write("python", "if [ \"$1\" = -c ]; then exit 0; fi\nexec /bin/sh \"$@\"\n")
	ref = write("torch_reference.py", `while [ $# -gt 0 ]; do
	if [ "$1" = --out-prefix ]; then prefix=$2; fi
	shift
done
cat > "$prefix.json" <<'EOF'
{"torch": "1.13.0a0", "threads": 2, "cpu": "fake",
 "bench": {"nonprivate": {"samples_per_s": 16000}, "dp_func": {"samples_per_s": 8000},
  "dp_hooks": {"samples_per_s": 3000}, "batch_size": 32, "model": "tb-mnist", "parameters": 26010}}
EOF
`)
	return python, ref
}

// bench persample --torch runs the reference and dptune in alternating
// rounds and prints each round, the ranges and the ratios; --json holds
// them.
func TestBenchPersampleTorch(t *testing.T) {
	python, ref := fakeTorchReference(t)
	dir := writeMNIST(t, 120)
	js := filepath.Join(t.TempDir(), "persample.json")
	code, text := run(t, "bench", "persample", "--torch", "--python", python, "--torch-reference", ref, "--rounds", "2",
		"--data-dir", dir, "--model", "tb-mnist", "--batch-size", "32", "--steps", "1", "--warmup", "0", "--json", js)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, text)
	}
	for _, want := range []string{"round 1/2: PyTorch reference", "round 2/2: dptune", "tb-mnist beside the PyTorch reference",
		"DP ÷ torch.func", "GEMM kernel"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if _, after, _ := strings.Cut(text, "\n  range "); !strings.HasPrefix(strings.Join(strings.Fields(after), " "), "16000 8000 3000 ") {
		t.Errorf("range row does not begin with PyTorch's canned figures:\n%s", text)
	}
	b, err := os.ReadFile(js)
	if err != nil || !strings.Contains(string(b), `"dp_over_pytorch_func"`) || !strings.Contains(string(b), `"dp_func_examples_per_s": 8000`) {
		t.Errorf("--json lacks the comparison (%v):\n%s", err, b)
	}
}

// bench persample --torch refuses, with one line and status 2 before any
// work, an interpreter without torch, a network the reference does not
// define, and --rounds without --torch.
func TestBenchPersampleTorchRefusals(t *testing.T) {
	python, ref := fakeTorchReference(t)
	dir := writeMNIST(t, 120)
	noTorch := filepath.Join(t.TempDir(), "python3")
	if err := os.WriteFile(noTorch, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--torch", "--python", noTorch, "--torch-reference", ref}, "bench persample --torch needs Debian's python3-torch (make torch-deps)"},
		{[]string{"--torch", "--python", python, "--torch-reference", ref, "--model", "scatter-linear-mnist"}, "does not define scatter-linear-mnist"},
		{[]string{"--torch", "--python", python, "--torch-reference", filepath.Join(dir, "none.py")}, "--torch-reference"},
		{[]string{"--rounds", "3"}, "--rounds needs --torch"},
	} {
		code, text := run(t, append([]string{"bench", "persample", "--data-dir", dir, "--steps", "1"}, c.args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(text), "\n") != 0 || !strings.Contains(text, c.want) {
			t.Errorf("%v: exit %d, %q, want one line with %q", c.args, code, text, c.want)
		}
	}
}
