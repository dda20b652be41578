package job

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
)

// TestMain keeps the tests' checkpoint key out of the user's configuration.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "dptune-job-key-")
	if err != nil {
		panic(err)
	}
	os.Setenv(checkpointKeyEnv, filepath.Join(dir, "checkpoint.key"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// writeMNISTFiles writes n training and 20 test examples in MNIST's IDX
// format to a new directory: noise with a label-dependent bright column.
func writeMNISTFiles(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	rng := randsrc.Seeded(7, "job mnist files")
	for _, set := range []struct {
		prefix string
		n      int
	}{{"train", n}, {"t10k", 20}} {
		var img, lab bytes.Buffer
		binary.Write(&img, binary.BigEndian, []uint32{0x803, uint32(set.n), 28, 28})
		binary.Write(&lab, binary.BigEndian, []uint32{0x801, uint32(set.n)})
		for range set.n {
			y := byte(rng.IntN(10))
			lab.WriteByte(y)
			for k := range 784 {
				v := byte(rng.IntN(60))
				if k%10 == int(y) {
					v += 150
				}
				img.WriteByte(v)
			}
		}
		for name, b := range map[string][]byte{set.prefix + "-images-idx3-ubyte": img.Bytes(), set.prefix + "-labels-idx1-ubyte": lab.Bytes()} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// failingEngine fails its ClippedSum call number after (counting from 1).
type failingEngine struct {
	dpsgd.Engine
	calls, after int
}

func (e *failingEngine) ClippedSum(x []float32, y []uint8, idx []int, c dpsgd.Clip, sum []float32) (float64, error) {
	e.calls++
	if e.calls == e.after {
		return 0, errors.New("planted engine failure")
	}
	return e.Engine.ClippedSum(x, y, idx, c, sum)
}

// checkpointedSpec is a 2-epoch run (6 steps an epoch) of 60 examples in
// dir, keeping its checkpoint under out.
func checkpointedSpec(t *testing.T, dir, out string) TrainSpec {
	t.Helper()
	src, err := Dataset("mnist", dir)
	if err != nil {
		t.Fatal(err)
	}
	return TrainSpec{Data: src.WithNominalSize(60), Delta: 1e-5, NoiseMultiplier: 1, ClipNorm: 1, BatchSize: 10, Epochs: 2,
		LearningRate: 0.1, Checkpoint: CheckpointPath(out)}
}

// A run that fails after a checkpoint keeps it (the disk filled, the
// engine failed): its error says so, and a resume finishes the run and
// removes it.
func TestFailedRunKeepsItsCheckpoint(t *testing.T) {
	dir := writeMNISTFiles(t, 60)
	out := filepath.Join(t.TempDir(), "out")
	file := filepath.Join(t.TempDir(), "b.budget")
	if err := budget.Init(file, 100, 1e-5, "mnist"); err != nil {
		t.Fatal(err)
	}
	s := checkpointedSpec(t, dir, out)
	s.Budget = file
	s.engine = func(net *model.Net, cfg dpsgd.Config) (dpsgd.Engine, error) {
		e, err := dpsgd.NewEngineWorkers(net, 10, 1)
		return &failingEngine{Engine: e, after: 9}, err
	}
	rel, _, err := Train(context.Background(), s)
	if err == nil || rel == nil || !rel.Failed || !strings.Contains(err.Error(), "is kept") {
		t.Fatalf("a failing engine: %v", err)
	}
	if !CheckpointOf(out) {
		t.Fatal("the failed run's checkpoint was removed")
	}
	var shown *float64
	rel, _, err = ResumeTrain(context.Background(), out, TrainHooks{Progress: func(p TrainProgress) {
		if shown == nil {
			shown = p.EpsilonBefore
		}
	}})
	if err != nil || rel.Report.(*TrainReport).Steps != 12 {
		t.Fatalf("resume: %v", err)
	}
	// Unseeded: the failed process counts at its worst case (all 12 planned
	// steps), then the resume's own 6: as 18 steps composed.
	q := 10.0 / 60
	atStart, err := accounting.RDP{}.Epsilon(accounting.DPSGD(1, q, 12), 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := accounting.RDP{}.Epsilon(accounting.DPSGD(1, q, 18), 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if shown == nil || math.Abs(*shown-atStart.Epsilon) > 1e-9*atStart.Epsilon {
		t.Errorf("the resume showed ε %v before its first step, want the failed run's worst case %v", shown, atStart.Epsilon)
	}
	if eps := rel.Report.(*TrainReport).Epsilon; eps == nil || math.Abs(*eps-whole.Epsilon) > 1e-9*whole.Epsilon {
		t.Errorf("the resumed release states ε %v, want that of 12 + 6 steps, %v", eps, whole.Epsilon)
	}
	if _, err := os.Stat(CuratorDir(out)); err == nil {
		t.Error("the curator directory outlived the finished run")
	}
	// The budget file charges what the release states: the failed run at
	// its worst case, then the resume's steps.
	b, err := budget.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var charged accounting.Ledger
	for _, r := range b.Releases {
		charged.Entries = append(charged.Entries, r.Ledger.Entries...)
	}
	got, err := accounting.RDP{}.Epsilon(charged.Event(), 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Releases) != 2 || math.Abs(got.Epsilon-whole.Epsilon) > 1e-9*whole.Epsilon {
		t.Errorf("the budget charged ε %v over %d releases, the release states %v", got.Epsilon, len(b.Releases), whole.Epsilon)
	}
}

// interruptedRun trains checkpointedSpec into out and stops it after step
// 8, leaving a checkpoint of 8 steps.
func interruptedRun(t *testing.T, dir, out string) {
	t.Helper()
	s := checkpointedSpec(t, dir, out)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.Progress = func(p TrainProgress) {
		if p.Step == 8 {
			cancel()
		}
	}
	if _, _, err := Train(ctx, s); !errors.Is(err, context.Canceled) {
		t.Fatalf("Train: %v", err)
	}
}

// A resume is in its checkpoint's lineage before its first step: stopped
// before any step (or killed then), the checkpoint already names it, so a
// later resume counts it. A checkpoint copied to another run's curator
// directory is not resumed there, and a key inside a run's output is
// refused.
func TestResumeJoinsTheLineageFirst(t *testing.T) {
	dir := writeMNISTFiles(t, 60)
	out := filepath.Join(t.TempDir(), "out")
	interruptedRun(t, dir, out)
	key, err := checkpointKey(false)
	if err != nil {
		t.Fatal(err)
	}
	before, err := readCheckpoint(CheckpointPath(out), key)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(CuratorDir(copied), os.DirFS(CuratorDir(out))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ResumeTrain(context.Background(), copied, TrainHooks{}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "copied") {
		t.Errorf("a copied checkpoint: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if _, _, err := ResumeTrain(ctx, out, TrainHooks{Started: func(dpsgd.Config) { cancel() }}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a resume stopped before its first step: %v", err)
	}
	after, err := readCheckpoint(CheckpointPath(out), key)
	if err != nil {
		t.Fatal(err)
	}
	if after.Start != before.state.Step || len(after.Prior.Entries) <= len(before.Prior.Entries) || !strings.Contains(after.settings.Label, "(resumed)") {
		t.Errorf("after a resume stopped before its first step the checkpoint says start %d, prior %d entries, label %q (before: step %d, prior %d)",
			after.Start, len(after.Prior.Entries), after.settings.Label, before.state.Step, len(before.Prior.Entries))
	}
	// A key of its own, beside (not inside) another run's output.
	t.Setenv(checkpointKeyEnv, filepath.Join(out, "checkpoint.key"))
	if _, _, err := Train(context.Background(), checkpointedSpec(t, dir, out+"2")); err != nil {
		t.Fatalf("a key outside the output: %v", err)
	}
	t.Setenv(checkpointKeyEnv, filepath.Join(out+"3", "checkpoint.key"))
	if _, _, err := Train(context.Background(), checkpointedSpec(t, dir, out+"3")); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "inside") {
		t.Errorf("a key inside the run's output: %v", err)
	}
}

// A checkpoint whose state cannot continue its run (a step of 0, −5 or
// past the end, a parameter dropped, a value that is not finite) is
// refused with ErrInvalid before the budget is charged or the data read,
// and kept.
func TestResumeChecksTheStateFirst(t *testing.T) {
	dir := writeMNISTFiles(t, 60)
	file := filepath.Join(t.TempDir(), "b.budget")
	if err := budget.Init(file, 100, 1e-5, "mnist"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	s := checkpointedSpec(t, dir, out)
	s.Budget = file
	ctx, cancel := context.WithCancel(context.Background())
	s.Progress = func(p TrainProgress) {
		if p.Step == 8 {
			cancel()
		}
	}
	if _, _, err := Train(ctx, s); !errors.Is(err, context.Canceled) {
		t.Fatalf("Train: %v", err)
	}
	key, err := checkpointKey(false)
	if err != nil {
		t.Fatal(err)
	}
	ckdir := CheckpointPath(out)
	ck, err := readCheckpoint(ckdir, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil { // a resume that read the data would fail on that instead
		t.Fatal(err)
	}
	for name, edit := range map[string]func(st *dpsgd.State){
		"step 0":               func(st *dpsgd.State) { st.Step = 0 },
		"step -5":              func(st *dpsgd.State) { st.Step = -5 },
		"step 1e5":             func(st *dpsgd.State) { st.Step = 100000 },
		"a parameter short":    func(st *dpsgd.State) { st.Params = st.Params[1:] },
		"a NaN parameter":      func(st *dpsgd.State) { st.Params[3] = float32(math.NaN()) },
		"an infinite velocity": func(st *dpsgd.State) { st.Velocity[0] = float32(math.Inf(1)) },
	} {
		st := *ck.state
		st.Params = append([]float32(nil), ck.state.Params...)
		st.Velocity = append([]float32(nil), ck.state.Velocity...)
		edit(&st)
		if err := writeCheckpoint(ckdir, key, ck.settings, ck.lineage, st); err != nil {
			t.Fatal(err)
		}
		_, _, err := ResumeTrain(context.Background(), out, TrainHooks{})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "dpsgd:") {
			t.Errorf("%s: %v", name, err)
		}
		if !CheckpointOf(out) {
			t.Fatalf("%s: the checkpoint was removed", name)
		}
	}
	b, err := budget.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Releases) != 1 {
		t.Errorf("the refused resumes charged the budget: %d releases", len(b.Releases))
	}
}
