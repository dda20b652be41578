package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// writeMNISTDir writes an MNIST-format directory (uncompressed IDX files)
// of nTrain training and nTest test examples whose label shows in the
// image; the training example at index skip (if ≥ 0) is left out, so that
// two directories differ in exactly one example.
func writeMNISTDir(t *testing.T, nTrain, nTest, skip int) string {
	t.Helper()
	dir := t.TempDir()
	rng := randsrc.Seeded(11, "mnist dir")
	write := func(name string, magic uint32, dims []uint32, payload []byte) {
		var b bytes.Buffer
		binary.Write(&b, binary.BigEndian, magic)
		binary.Write(&b, binary.BigEndian, dims)
		b.Write(payload)
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, set := range []struct {
		prefix string
		n      int
		skip   int
	}{{"train", nTrain, skip}, {"t10k", nTest, -1}} {
		var imgs, labels []byte
		for i := 0; i < set.n; i++ {
			label := byte(rng.IntN(10))
			img := make([]byte, 784)
			for k := range img {
				img[k] = byte(rng.IntN(60))
				if k%10 == int(label) {
					img[k] += 150
				}
			}
			if i == set.skip {
				continue
			}
			imgs, labels = append(imgs, img...), append(labels, label)
		}
		write(set.prefix+"-images-idx3-ubyte", 0x803, []uint32{uint32(len(labels)), 28, 28}, imgs)
		write(set.prefix+"-labels-idx1-ubyte", 0x801, []uint32{uint32(len(labels))}, labels)
	}
	return dir
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readReport(t *testing.T, path string) map[string]json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// Hostile and impossible inputs, each exactly as found when the tool was
// tried as a new user would, end with one line and exit 2 before any work.
// Where the data directory does not exist, exit 2 (not 1) shows the check
// came before loading.
func TestHostileInputsExit2(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-dir")
	var dims []string
	for i := 0; i < 30; i++ {
		dims = append(dims, `{"name": "d`+string(rune('a'+i%26))+string(rune('a'+i/26))+`", "values": [1, 2, 3, 4, 5, 6, 7, 8]}`)
	}
	big := writeFile(t, "big.json", `{"name": "big", "dims": [`+strings.Join(dims, ",")+`]}`)
	count := writeFile(t, "count.json", `{"name": "x", "dims": [{"name": "learning_rate", "min": 0.1, "max": 1, "count": 100000000000}]}`)
	negLR := writeFile(t, "neg.json", `{"name": "neg", "dims": [{"name": "learning_rate", "values": [0.1, -0.1]}]}`)
	zeroClip := writeFile(t, "clip.json", `{"name": "clip", "dims": [{"name": "clip_norm", "values": [0]}]}`)
	unknown := writeFile(t, "lr.json", `{"name": "lr", "dims": [{"name": "lr", "values": [0.1]}]}`)
	file := writeFile(t, "a-file", "")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"tune", "--tuner", "doubling", "--batch-size", "0"}, "batch size 0"},
		{[]string{"tune", "--space", big}, "candidates"},
		{[]string{"tune", "--space", count}, "100000000000"},
		{[]string{"train", "--epochs", "4611686018427387904"}, "steps"},
		{[]string{"account", "--sampling-rate", "1e-9", "--epochs", "100000000000"}, "steps"},
		{[]string{"account", "--sampling-rate", "1e-9", "--steps", "100000000000", "--noise-multiplier", "1"}, "--steps"},
		{[]string{"tune", "--space", negLR, "--dataset", "cifar10", "--data-dir", missing}, "-0.1"},
		{[]string{"tune", "--space", zeroClip, "--dataset", "cifar10", "--data-dir", missing}, "clip_norm"},
		{[]string{"tune", "--space", unknown, "--dataset", "cifar10", "--data-dir", missing}, `"lr"`},
		{[]string{"tune", "--tuner", "gp", "--c", "0", "--dataset", "cifar10", "--data-dir", missing}, "c = 0"},
		{[]string{"tune", "--tuner", "doubling", "--momentum", "1", "--dataset", "cifar10", "--data-dir", missing}, "momentum 1"},
		{[]string{"train", "--out", filepath.Join(file, "sub"), "--dataset", "cifar10", "--data-dir", missing}, "--out"},
		{[]string{"tune", "--out", filepath.Join(file, "sub"), "--dataset", "cifar10", "--data-dir", missing}, "--out"},
		{[]string{"tune", "--tuner", "randomstop", "--validation", "public"}, "--public-val-dir"},
		{[]string{"tune", "--tuner", "randomstop", "--public-val-dir", missing}, "--validation public"},
		{[]string{"train", "--nominal-size", "100"}, "--data-dir"},
		{[]string{"tune", "--tuner", "doubling", "--epsilon", "0.5", "--dataset", "cifar10", "--data-dir", missing}, "search alone"},
	}
	for _, c := range cases {
		code, out := run(t, c.args...)
		if code != 2 || !strings.Contains(out, c.want) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%v: exit %d, want 2 and one line containing %q:\n%s", c.args, code, c.want, out)
		}
	}
	// Valid zero settings are honoured, not replaced by defaults: τ = 0
	// passes every check and the run goes on to read the (missing) data.
	if code, out := run(t, "tune", "--tuner", "gp", "--tau", "0", "--dataset", "cifar10", "--data-dir", missing); code != 1 || !strings.Contains(out, "CIFAR-10 directory") {
		t.Errorf("--tau 0: exit %d: %s", code, out)
	}
	// PLD calibration waits until the data has been read: an empty data
	// directory fails at once (exit 1) instead of after the calibration.
	empty := t.TempDir()
	if code, out := run(t, "train", "--accountant", "pld", "--epsilon", "1000", "--dataset", "cifar10", "--data-dir", empty); code != 1 || !strings.Contains(out, "CIFAR-10 file") {
		t.Errorf("pld with empty data: exit %d: %s", code, out)
	}
}

// account with a noise multiplier so small that 1/σ² overflows answers +Inf
// at once, and --json writes null with a note instead of failing; a step
// search that reaches its cap says so.
func TestAccountUnboundedAndCapped(t *testing.T) {
	code, out := run(t, "account", "--noise-multiplier", "1e-300", "--sampling-rate", "0.0042667", "--steps", "1000")
	if code != 0 || !strings.Contains(out, "+Inf") {
		t.Fatalf("exit %d: %s", code, out)
	}
	code, out = run(t, "account", "--noise-multiplier", "1e-300", "--sampling-rate", "0.0042667", "--steps", "1000", "--json")
	var res map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["epsilon"] != nil || !strings.Contains(res["epsilon_note"].(string), "unbounded") {
		t.Fatalf("exit %d: %s", code, out)
	}
	code, out = run(t, "account", "--epsilon", "1e6", "--noise-multiplier", "100", "--sampling-rate", "0.001")
	if code != 0 || !strings.Contains(out, "cap of 1073741824 steps") {
		t.Fatalf("exit %d: %s", code, out)
	}
	code, out = run(t, "account", "--epsilon", "1e6", "--noise-multiplier", "100", "--sampling-rate", "0.001", "--json")
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res["steps_capped"] != true {
		t.Fatalf("exit %d: %s", code, out)
	}
}

// train with the PLD accountant and a noise multiplier too small for any
// finite ε writes its report with "epsilon": null and a note.
func TestTrainUnboundedEpsilonReport(t *testing.T) {
	dir := writeMNISTDir(t, 200, 50, -1)
	out := filepath.Join(t.TempDir(), "run")
	code, text := run(t, "train", "--accountant", "pld", "--noise-multiplier", "1e-300", "--data-dir", dir, "--nominal-size", "200",
		"--batch-size", "50", "--epochs", "1", "--seed", "1", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, text)
	}
	rep := readReport(t, filepath.Join(out, "report.json"))
	if string(rep["epsilon"]) != "null" || !strings.Contains(string(rep["epsilon_note"]), "unbounded") || string(rep["secure_noise"]) != "false" {
		t.Errorf("epsilon %s, note %s, secure_noise %s", rep["epsilon"], rep["epsilon_note"], rep["secure_noise"])
	}
}

// A space whose every run diverges releases nothing (a failed run is never a
// model), and eval refuses a model whose parameters are not finite.
func TestDivergingRunsAndNonFiniteModels(t *testing.T) {
	dir := writeMNISTDir(t, 300, 50, -1)
	space := writeFile(t, "diverge.json", `{"name": "diverge", "dims": [{"name": "learning_rate", "values": [1e300]}, {"name": "clip_norm", "values": [1]}]}`)
	out := filepath.Join(t.TempDir(), "tune")
	code, text := run(t, "tune", "--tuner", "randomstop", "--space", space, "--data-dir", dir, "--nominal-size", "300", "--val-size", "100", "--batch-size", "50",
		"--epochs", "1", "--mean-runs", "2", "--epsilon", "8", "--seed", "2", "--out", out)
	if code != 0 || !strings.Contains(text, "released       nothing") {
		t.Fatalf("exit %d: %s", code, text)
	}
	rep := readReport(t, filepath.Join(out, "report.json"))
	if string(rep["selected"]) != "null" || string(rep["test_accuracy"]) != "null" {
		t.Errorf("released %s / %s from diverged runs", rep["selected"], rep["test_accuracy"])
	}
	net, err := model.New(model.MNIST, randsrc.Seeded(1, "init"))
	if err != nil {
		t.Fatal(err)
	}
	net.Params[5] = float32(1) / float32(len(net.Params)-len(net.Params)) // +Inf
	mdir := t.TempDir()
	if err := net.Save(mdir, model.Metadata{}); err != nil {
		t.Fatal(err)
	}
	if code, text := run(t, "eval", "--model", mdir, "--data-dir", dir); code != 1 || !strings.Contains(text, "not all finite") {
		t.Errorf("eval of a non-finite model: exit %d: %s", code, text)
	}
}

// Released sizes do not depend on the data: two data directories that
// differ in one example and declare the same nominal size give byte-identical
// sampling rate, base noise multiplier and ledger. The private score is an
// integer count over the nominal validation size.
func TestNominalSizesDoNotDependOnTheData(t *testing.T) {
	space := writeFile(t, "small.json", `{"name": "small", "dims": [{"name": "learning_rate", "values": [0.5]}, {"name": "clip_norm", "values": [1]}]}`)
	var reps []map[string]json.RawMessage
	for _, skip := range []int{-1, 17} {
		dir := writeMNISTDir(t, 400, 50, skip)
		out := filepath.Join(t.TempDir(), "tune")
		code, text := run(t, "tune", "--tuner", "randomstop", "--space", space, "--data-dir", dir, "--nominal-size", "400", "--val-size", "100", "--batch-size", "50",
			"--epochs", "1", "--mean-runs", "3", "--epsilon", "8", "--seed", "5", "--out", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, text)
		}
		reps = append(reps, readReport(t, filepath.Join(out, "report.json")))
	}
	for _, k := range []string{"sampling_rate", "base_noise_multiplier", "ledger", "nominal_size", "validation_size"} {
		if !bytes.Equal(reps[0][k], reps[1][k]) {
			t.Errorf("%s differs: %s vs %s", k, reps[0][k], reps[1][k])
		}
	}
	if string(reps[0]["sampling_rate"]) != "0.16666666666666666" {
		t.Errorf("sampling rate %s, want 50/(400−100)", reps[0]["sampling_rate"])
	}
	for _, rep := range reps {
		if string(rep["selected"]) == "null" {
			continue // K = 0 runs
		}
		var score float64
		var count int64
		json.Unmarshal(rep["validation_score"], &score)
		if err := json.Unmarshal(rep["validation_noisy_count"], &count); err != nil || score*100 != float64(count) {
			t.Errorf("score %v is not the integer count %d over the nominal 100 (%v)", score, count, err)
		}
	}
	var ledger accounting.Ledger
	if err := json.Unmarshal(reps[0]["ledger"], &ledger); err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	json.Compact(&compact, reps[0]["ledger"])
	if !strings.Contains(compact.String(), `"type":"discrete_gaussian","noise_multiplier":20,"sensitivity":1`) {
		t.Errorf("the score is not a discrete Gaussian of multiplier 20 in the ledger: %s", reps[0]["ledger"])
	}
}

// --validation public scores on the declared public set: no score mechanism
// in the ledger.
func TestPublicValidationSet(t *testing.T) {
	private, public := writeMNISTDir(t, 300, 50, -1), writeMNISTDir(t, 100, 10, -1)
	space := writeFile(t, "small.json", `{"name": "small", "dims": [{"name": "learning_rate", "values": [0.5]}]}`)
	out := filepath.Join(t.TempDir(), "tune")
	code, text := run(t, "tune", "--tuner", "randomstop", "--space", space, "--data-dir", private, "--nominal-size", "300", "--validation", "public", "--public-val-dir", public,
		"--batch-size", "50", "--epochs", "1", "--mean-runs", "2", "--epsilon", "8", "--seed", "1", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, text)
	}
	rep := readReport(t, filepath.Join(out, "report.json"))
	if string(rep["validation"]) != `"public"` || strings.Contains(string(rep["ledger"]), "discrete_gaussian") || string(rep["sampling_rate"]) != "0.16666666666666666" {
		t.Errorf("validation %s, sampling rate %s, ledger %s", rep["validation"], rep["sampling_rate"], rep["ledger"])
	}
}

// The budget file end to end: a train run at ε = 1 under a cap of 1.5 runs
// and is recorded; one at ε = 1.5, which would push the filter's total over
// the cap, exits 2 before reading data (its data directory does not even
// exist); budget show lists the first.
func TestBudgetAcrossRuns(t *testing.T) {
	dir := writeMNISTDir(t, 300, 50, -1)
	file := filepath.Join(t.TempDir(), "mnist.budget")
	if code, out := run(t, "budget", "init", file, "--epsilon", "1.5", "--delta", "1e-5", "--dataset", "mnist"); code != 0 {
		t.Fatalf("init: exit %d: %s", code, out)
	}
	out1 := filepath.Join(t.TempDir(), "run1")
	if code, out := run(t, "train", "--budget", file, "--epsilon", "1", "--data-dir", dir, "--nominal-size", "300", "--batch-size", "50",
		"--epochs", "1", "--out", out1); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, out)
	}
	code, out := run(t, "train", "--budget", file, "--epsilon", "1.5", "--data-dir", filepath.Join(dir, "missing"), "--nominal-size", "300",
		"--batch-size", "50", "--epochs", "1", "--out", filepath.Join(t.TempDir(), "run2"))
	if code != 2 || !strings.Contains(out, "remains") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("second run: exit %d: %s", code, out)
	}
	code, out = run(t, "budget", "show", file)
	if code != 0 || strings.Count(out, "dptune train → "+out1) != 1 || !strings.Contains(out, "done") {
		t.Fatalf("show: exit %d: %s", code, out)
	}
}

// Findings of the attacker's review: --budget refuses seeded runs (their
// noise is reused across runs); a public validation directory may not be
// the private data's; an empty training set fails cleanly under a budget.
func TestBudgetAndValidationReviewFindings(t *testing.T) {
	dir := writeMNISTDir(t, 200, 20, -1)
	file := filepath.Join(t.TempDir(), "b.budget")
	if code, out := run(t, "budget", "init", file, "--epsilon", "5", "--delta", "1e-5", "--dataset", "mnist"); code != 0 {
		t.Fatal(out)
	}
	for _, args := range [][]string{
		{"train", "--budget", file, "--seed", "1", "--data-dir", dir},
		{"tune", "--budget", file, "--seed", "1", "--data-dir", dir},
		{"tune", "--tuner", "doubling", "--budget", file, "--seed", "1", "--data-dir", dir},
		{"tune", "--validation", "public", "--public-val-dir", dir, "--data-dir", dir},
	} {
		if code, out := run(t, args...); code != 2 || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("%v: exit %d: %s", args, code, out)
		}
	}

	empty := writeMNISTDir(t, 0, 10, -1)
	if code, out := run(t, "train", "--budget", file, "--data-dir", empty, "--nominal-size", "200", "--batch-size", "50", "--epochs", "1",
		"--out", filepath.Join(t.TempDir(), "e")); code != 1 || !strings.Contains(out, "empty training set") {
		t.Errorf("empty training set: exit %d: %s", code, out)
	}
}
