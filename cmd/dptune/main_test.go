package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// run executes dptune with args in-process and returns its exit status and output.
func run(t *testing.T, args ...string) (int, string) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil {
		out.WriteString("dptune: " + err.Error() + "\n")
	}
	return exitCode(err), out.String()
}

// Impossible requests end with a one-line error and status 2 before any work
// starts (each returns well before data could be loaded or a step taken).
func TestImpossibleRequestsExit2(t *testing.T) {
	cases := [][]string{
		{"train", "--epsilon", "0"},
		{"train", "--epsilon", "-1"},
		{"train", "--epsilon", "NaN"},
		{"train", "--delta", "0"},
		{"train", "--delta", "1"},
		{"train", "--delta", "1.5"},
		{"train", "--batch-size", "60001"},
		{"train", "--batch-size", "0"},
		{"train", "--epochs", "-1"},
		{"train", "--dataset", "imagenet"},
		{"train", "--lr", "0"},
		{"train", "--momentum", "1"},
		{"train", "--lr-schedule", "linear"},
		{"train", "--ema-decay", "1"},
		{"train", "--ema-decay", "-0.5"},
		{"train", "--clip-norm", "0"},
		{"train", "--no-such-flag"},
		{"train", "--epochs", "ten"},
		{"train", "--epsilon", "3", "--noise-multiplier", "1"},
		{"train", "--noise-multiplier", "1e300"},
		{"train", "--budget", "/nonexistent/mnist.budget"},
		{"train", "--non-private", "--epsilon", "3"},
		{"train", "--epsilon", "1e-9"},
		{"train", "--accountant", "moments"},
		{"train", "--accountant", "gdp"},
		{"train", "--dataset", "cifar10"},
		{"eval", "--dataset", "mnist"},
		{"tune", "--tuner", "bayes"},
		{"tune", "--space", "imagenet-grid"},
		{"tune", "--space", "missing.json"},
		{"tune", "--epsilon", "0.01"},
		{"tune", "--epsilon", "-1"},
		{"tune", "--delta", "2"},
		{"tune", "--tuner", "gp", "--runs-dist", "poisson"},
		{"tune", "--runs-dist", "tnb", "--eta", "-1"},
		{"tune", "--runs-dist", "uniform"},
		{"tune", "--mean-runs", "0.5"},
		{"tune", "--tuner", "gp", "--C", "0.5"},
		{"tune", "--tau", "1"},
		{"tune", "--validation", "maybe"},
		{"tune", "--val-size", "60000"},
		{"tune", "--epochs", "0"},
		{"tune", "--tuner", "doubling", "--partitions", "0"},
		{"tune", "--tuner", "doubling", "--epsilon0", "0"},
		{"tune", "--tuner", "doubling", "--granularity", "1"},
		{"tune", "--tuner", "doubling", "--u0", "1"},
		{"tune", "--tuner", "doubling", "--max-iterations", "-3"},
		{"tune", "--tuner", "doubling", "--partitions", "6000"},
		{"tune", "--tuner", "doubling", "--partitions", "100", "--part-batch", "1000"},
		{"tune", "--tuner", "doubling", "--eta", "2"},
		{"tune", "--tuner", "randomstop", "--partitions", "10"},
		{"bench", "doubling", "--reps", "0"},
		{"bench", "tuners", "--gammas", "0"},
		{"bench", "tuners", "--gammas", "0.001"},
		{"bench", "tuners", "--repeats", "0"},
		{"bench", "tuners", "--epsilon", "0"},
		{"bench", "tuners", "--model", "no-such-network"},
		{"bench", "persample", "--steps", "0"},
		{"bench", "persample", "--batch-size", "0"},
		{"bench", "persample", "--batch-size", "70000"},
		{"bench", "persample", "--plot", "out.jpg"},
		{"bench", "persample", "--dataset", "cifar10"},
		{"bench", "vote", "--reps", "0"},
		{"bench", "vote", "--clients", "1"},
		{"bench", "vote", "--clients", "300"},
		{"bench", "vote", "--alphas", "-1"},
		{"bench", "vote", "--epsilons", "0"},
		{"bench", "vote", "--votes-per-client", "25"},
		{"bench", "vote", "--subset", "-5"},
		{"bench", "vote", "--space", "missing.json"},
		{"bench", "compare", "--epsilon", "0"},
		{"bench", "compare", "--epsilon", "0.001"},
		{"bench", "compare", "--tuners", "bayes"},
		{"bench", "compare", "--seeds", "0"},
		{"bench", "compare", "--doubling-share", "1"},
		{"bench", "compare", "--mean-runs", "1"},
		{"bench", "compare", "--budget", "b.json"},
		{"bench", "compare", "--clip-stride", "0"},
		{"bench", "compare", "--baselines"},
		{"bench", "compare", "--reference-seeds", "9"},
		{"bench", "compare", "--default-settings", "batch_size=256,epochs=1,learning_rate=1,momentum=0,clip_norm=1"},
		{"bench", "compare", "--default-settings", "batch_size=256", "--default-source", "mine"},
		{"bench", "compare", "--default-settings", "batch_size=2.5,epochs=1,learning_rate=1,momentum=0,clip_norm=1", "--default-source", "mine"},
		{"bench", "compare", "--default-source", "mine"},
		{"bench", "compare", "--train-subset", "-5"},
		{"bench", "compare", "--train-subset", "60000"},
		{"bench", "report", "--from", "missing-dir"},
		{"tune", "--tuner", "grid", "--mean-runs", "3"},
		{"tune", "--tuner", "grid", "--epsilon", "0.05"},
		{"vote", "serve", "--budget", "b.json"},
		{"vote", "serve", "--clients", "1"},
		{"vote", "serve", "--vote-epsilon", "5", "--epsilon", "3"},
		{"vote", "serve", "--listen", "256.0.0.1:99999"},
		{"vote", "client"},
		{"vote", "client", "--server", "127.0.0.1:1", "--part", "0/3"},
		{"vote", "client", "--server", "127.0.0.1:1", "--part", "4/3"},
		{"vote", "client", "--server", "127.0.0.1:1", "--part", "two"},
		{"vote", "serve", "--final-training", "dp-fed"},
		{"vote", "serve", "--final-training", "dp-fedavg", "--clip-norm", "0"},
	}
	for _, args := range cases {
		expectExit2(t, 2*time.Second, "", args...)
	}
}

func TestBadDataDirExit1(t *testing.T) {
	code, out := run(t, "train", "--data-dir", filepath.Join(t.TempDir(), "missing"), "--epochs", "1")
	if code != 1 || !strings.Contains(out, "missing") {
		t.Fatalf("exit %d, output %q", code, out)
	}
}

// One DP epoch on real MNIST, accounted by PLD: the report has the documented keys, its ε is
// the accountant's for the run's own σ, q and steps and meets the target,
// and `dptune eval` on the saved model reproduces the reported accuracy.
func TestTrainAndEvalEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for an epoch")
	}
	dir := filepath.Join(t.TempDir(), "m")
	code, out := run(t, "train", "--epochs", "1", "--epsilon", "2", "--accountant", "pld", "--seed", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"dataset", "epsilon", "delta", "noise_multiplier", "clip_norm", "sampling_rate", "steps", "epochs", "test_accuracy", "secure_noise", "ledger"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("report.json lacks %q", k)
		}
	}
	sigma, q, steps := rep["noise_multiplier"].(float64), rep["sampling_rate"].(float64), int(rep["steps"].(float64))
	if steps != 235 || q != 256.0/60000 {
		t.Fatalf("steps %d, q %v", steps, q)
	}
	g, err := accounting.PLD{}.Epsilon(accounting.DPSGD(sigma, q, steps), 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if eps := rep["epsilon"].(float64); eps != g.Epsilon || eps > 2 || eps < 1.99 || rep["accountant"] != "pld" {
		t.Fatalf("reported ε %v, accountant %v, target 2", eps, g.Epsilon)
	}
	// Training helped: the model beats the same seed's untrained network.
	acc := rep["test_accuracy"].(float64)
	untrained, err := model.New(model.MNIST, randsrc.Seeded(1, "init"))
	if err != nil {
		t.Fatal(err)
	}
	dir0, _ := data.MNISTDir()
	_, test, err := data.LoadMNIST(dir0)
	if err != nil {
		t.Fatal(err)
	}
	m0, err := untrained.Evaluate(context.Background(), test.X, test.Y)
	if err != nil {
		t.Fatal(err)
	}
	if acc <= m0.Accuracy+0.5 {
		t.Errorf("test accuracy %v after one DP epoch, untrained %v", acc, m0.Accuracy)
	}
	code, out = run(t, "eval", "--model", dir, "--dataset", "mnist")
	if code != 0 || !strings.Contains(out, fmt.Sprintf("test accuracy  %.4f", acc)) {
		t.Fatalf("eval exit %d: %s (report: %v)", code, out, acc)
	}
	if code, out := run(t, "eval", "--model", dir, "--dataset", "cifar10", "--data-dir", "x"); code != 2 {
		t.Fatalf("eval of an MNIST model on CIFAR-10: exit %d %s", code, out)
	}
}

// The acceptance check for the non-private baseline: one epoch of
// plain SGD with the default settings reaches ≥ 97% test accuracy on the
// opacus-mnist network.
func TestNonPrivateEpoch(t *testing.T) {
	if testing.Short() {
		t.Skip("trains for an epoch")
	}
	dir := filepath.Join(t.TempDir(), "np")
	code, out := run(t, "train", "--non-private", "--model", "opacus-mnist", "--epochs", "1", "--seed", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "report.json"))
	var rep struct {
		Epsilon      *float64 `json:"epsilon"`
		Private      bool     `json:"private"`
		TestAccuracy float64  `json:"test_accuracy"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Epsilon != nil || rep.Private {
		t.Fatalf("non-private run reported ε %v, private %v", rep.Epsilon, rep.Private)
	}
	if rep.TestAccuracy < 0.97 {
		t.Fatalf("test accuracy %v < 0.97", rep.TestAccuracy)
	}
}

// expectExit2 runs args and asserts what every refusal of bad input
// gives: exit 2, one line (containing want, when want is not empty), and
// no work before it (within limit).
func expectExit2(t *testing.T, limit time.Duration, want string, args ...string) {
	t.Helper()
	start := time.Now()
	code, out := run(t, args...)
	if code != 2 || strings.Count(strings.TrimSpace(out), "\n") != 0 || !strings.Contains(out, want) {
		t.Errorf("%v: exit %d, output %q; want 2 and one line containing %q", args, code, out, want)
	}
	if d := time.Since(start); d > limit {
		t.Errorf("%v took %v: work started before the error", args, d)
	}
}
