package job

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/privacy/budget"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// resumeNet is a network small enough to tune many times in a test.
var resumeNet = model.Spec{Name: "resume-linear", Layers: []model.LayerSpec{model.Flatten(), model.Linear(10)}}

// resumeSource is the n MNIST-format examples in dir (writeMNISTFiles) with
// resumeNet: a dataset known by name, as a resume rebuilds it.
func resumeSource(t *testing.T, dir string, n int) Source {
	t.Helper()
	src, err := Dataset("mnist", dir)
	if err != nil {
		t.Fatal(err)
	}
	if src, err = src.WithNominalSize(n).WithModel(resumeNet); err != nil {
		t.Fatal(err)
	}
	return src
}

// resumableTunings are seeded tunings of every central tuner kept in
// TuneCheckpointPath(out), one job at a time (so that the kill points are
// the same in every test run).
func resumableTunings(t *testing.T, out string) map[string]TuneSpec {
	t.Helper()
	seed := uint64(5)
	small := resumeSource(t, writeMNISTFiles(t, 600), 600)
	lrs := tuning.Space{Name: "lr", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.05, 0.5}, Log: true}}}
	base := TuneSpec{Data: small, Space: lrs, Epsilon: 6, Delta: 1e-5, Epochs: 1, BatchSize: 50, Validation: "private", ValSize: 100,
		ScoreNoise: 5, Seed: &seed, Runner: runner.Local{Workers: 1}, Checkpoint: TuneCheckpointPath(out), Label: "a resumable tuning"}
	with := func(f func(*TuneSpec)) TuneSpec {
		s := base
		f(&s)
		return s
	}
	return map[string]TuneSpec{
		tuning.GridName: with(func(s *TuneSpec) { s.Tuner = tuning.GridName }),
		tuning.RandomStopName: with(func(s *TuneSpec) {
			s.Tuner, s.Repetitions, s.SelectionShare = tuning.RandomStopName, accounting.PoissonRepetitions(3), 0.5
		}),
		tuning.GPName: with(func(s *TuneSpec) {
			s.Tuner, s.Repetitions = tuning.GPName, accounting.TNBRepetitions(1, 0.5)
			s.Space = tuning.Space{Name: "lr3", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.05, 0.2, 0.5}, Log: true}}}
		}),
		tuning.DoublingName: with(func(s *TuneSpec) {
			s.Tuner, s.Validation, s.ScoreNoise = tuning.DoublingName, "", 0
			s.Options = tuning.Values{"partitions": 2, "part-epochs": 1, "epsilon0": 0.5, "max-iterations": 4, "cache": filepath.Join(CuratorDir(out), "partition-scores.csv")}
		}),
		tuning.RecommendedName: with(func(s *TuneSpec) {
			s.Tuner, s.Data, s.BatchSize, s.Validation, s.ValSize, s.ScoreNoise = tuning.RecommendedName, resumeSource(t, writeMNISTFiles(t, 6000), 6000), 200, "", 0, 0
			s.Default = &TrainDefaults{BatchSize: 200, Epochs: 1, LearningRate: 0.2, ClipNorm: 1, Source: "a test"}
		}),
	}
}

// killPoint is what a tuning killed at one moment leaves: a copy of its
// curator directory (its checkpoint directory, and the doubling tuner's
// score cache) and of its budget file.
type killPoint struct {
	dir, budget string
	runs        int // run files in dir
}

// tuneWithKillPoints runs s to its end and returns its release with a
// kill point taken after every file it wrote into its checkpoint
// directory, and the number of runs it kept.
func tuneWithKillPoints(t *testing.T, s TuneSpec) (*Release, []killPoint, int) {
	t.Helper()
	var points []killPoint
	runs := 0
	tuneCheckpointWritten = func(path string) {
		if strings.HasSuffix(path, tuneRunExt) {
			runs++
		}
		snap := filepath.Join(t.TempDir(), "kill")
		kp := killPoint{dir: filepath.Join(snap, "curator"), runs: runs}
		copyTree(t, filepath.Dir(s.Checkpoint), kp.dir)
		if s.Budget != "" {
			kp.budget = filepath.Join(snap, "budget")
			copyFile(t, s.Budget, kp.budget)
		}
		points = append(points, kp)
	}
	defer func() { tuneCheckpointWritten = nil }()
	rel, _, err := Tune(context.Background(), s)
	if err != nil {
		t.Fatalf("%s, uninterrupted: %v", s.Tuner, err)
	}
	if _, err := os.Stat(s.Checkpoint); err == nil {
		t.Errorf("%s: the finished tuning left %s", s.Tuner, s.Checkpoint)
	}
	return rel, points, runs
}

// restore puts kp back where the tuning s left it when it was killed.
func restore(t *testing.T, kp killPoint, s TuneSpec) {
	t.Helper()
	os.RemoveAll(filepath.Dir(s.Checkpoint))
	copyTree(t, kp.dir, filepath.Dir(s.Checkpoint))
	if kp.budget != "" {
		copyFile(t, kp.budget, s.Budget)
	}
}

// resumeTune resumes the tuning into out as the command line does, and
// returns its release and the runs it ran (the others were given back).
func resumeTune(t *testing.T, out string, change func(*TuneSpec)) (*Release, int, error) {
	t.Helper()
	s, err := ResumeTuneSpec(out)
	if err != nil {
		return nil, 0, err
	}
	if change != nil {
		change(&s)
	}
	ran := 0
	tuneCheckpointWritten = func(path string) {
		if strings.HasSuffix(path, tuneRunExt) {
			ran++
		}
	}
	defer func() { tuneCheckpointWritten = nil }()
	rel, _, err := Tune(context.Background(), s)
	return rel, ran, err
}

// sameRelease fails unless a and b save the same files, byte for byte:
// report.json (the selection, its score, ε and the ledger), model.json
// and params.bin.
func sameRelease(t *testing.T, name string, a, b *Release) {
	t.Helper()
	da, db := t.TempDir(), t.TempDir()
	if err := a.Save(da); err != nil {
		t.Fatal(err)
	}
	if err := b.Save(db); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(da)
	if err != nil || len(entries) == 0 {
		t.Fatalf("%s: nothing saved: %v", name, err)
	}
	for _, e := range entries {
		x, _ := os.ReadFile(filepath.Join(da, e.Name()))
		y, err := os.ReadFile(filepath.Join(db, e.Name()))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s: %s differs from the uninterrupted tuning's (%v):\n%.600s\n%.600s", name, e.Name(), err, x, y)
		}
	}
}

// A seeded tuning of every central tuner killed at any moment — after any
// file it kept, the state before and after the data was read and every
// finished run (a copy of its directory at that moment is what SIGKILL
// leaves) — and resumed ends with the release of the tuning never
// stopped, byte for byte: the same selection, model, score, ε and ledger.
// The resume runs only the jobs the killed tuning had not finished, and
// leaves nothing behind.
func TestTuneResumeSeededAtEveryKillPoint(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes each tuner several times")
	}
	out := filepath.Join(t.TempDir(), "out")
	for name, s := range resumableTunings(t, out) {
		whole, points, runs := tuneWithKillPoints(t, s)
		if len(points) < 3 || runs < 2 {
			t.Fatalf("%s: %d kill points, %d runs", name, len(points), runs)
		}
		for i, kp := range points {
			restore(t, kp, s)
			rel, ran, err := resumeTune(t, out, nil)
			if err != nil {
				t.Fatalf("%s, killed at point %d: resume: %v", name, i, err)
			}
			if ran != runs-kp.runs {
				t.Errorf("%s, killed after %d of %d runs: the resume ran %d", name, kp.runs, runs, ran)
			}
			sameRelease(t, fmt.Sprintf("%s, killed at point %d", name, i), whole, rel)
			if TuneCheckpointOf(out) {
				t.Errorf("%s: the resumed tuning left its state", name)
			}
		}
	}
}

// An unseeded tuning charged to a budget file, killed and resumed: the
// resume draws from the key the killed process kept (sealed), so it ends
// with the release the tuning would have made, byte for byte, not another
// selection; the killed process's reservation is settled at its worst case
// and the resume charges nothing more (it reruns nothing with fresh
// noise), so the file holds one charge, never less than the uninterrupted
// tuning's. Killed before it charged the budget, it is charged by its
// resume.
func TestTuneResumeUnseededReusesItsKey(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes several times")
	}
	out := filepath.Join(t.TempDir(), "out")
	s := resumableTunings(t, out)[tuning.GridName]
	s.Seed = nil
	s.Budget = filepath.Join(t.TempDir(), "mnist.budget")
	if err := budget.Init(s.Budget, 100, 1e-5, "mnist"); err != nil {
		t.Fatal(err)
	}
	whole, points, _ := tuneWithKillPoints(t, s)
	after, err := budget.Load(s.Budget)
	if err != nil || len(after.Releases) != 1 {
		t.Fatalf("the uninterrupted tuning's charge: %+v, %v", after, err)
	}
	charged := after.Releases[0].Epsilon
	for i, kp := range points {
		killed, err := budget.Load(kp.budget)
		if err != nil {
			t.Fatal(err)
		}
		restore(t, kp, s)
		rel, _, err := resumeTune(t, out, nil)
		if err != nil {
			t.Fatalf("killed at point %d: %v", i, err)
		}
		sameRelease(t, fmt.Sprintf("unseeded, killed at point %d", i), whole, rel)
		b, err := budget.Load(s.Budget)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Releases) != 1 || b.Releases[0].Status != budget.Done || b.Releases[0].Epsilon < charged {
			t.Fatalf("killed at point %d (%d reservations then): budget %+v, want one charge of at least ε = %v", i, len(killed.Releases), b.Releases, charged)
		}
		if len(killed.Releases) == 1 && b.Releases[0].ID != killed.Releases[0].ID {
			t.Errorf("killed at point %d: the killed process's reservation was not the one settled", i)
		}
	}
}

// A tuning interrupted (Ctrl-C) keeps its finished runs and says how to
// continue; its worst case is charged, and the resume finishes it without
// charging again.
func TestTuneInterruptedResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes twice")
	}
	out := filepath.Join(t.TempDir(), "out")
	s := resumableTunings(t, out)[tuning.GridName]
	s.Seed = nil
	s.Budget = filepath.Join(t.TempDir(), "mnist.budget")
	if err := budget.Init(s.Budget, 100, 1e-5, "mnist"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tuneCheckpointWritten = func(path string) {
		if strings.HasSuffix(path, tuneRunExt) {
			cancel()
		}
	}
	_, _, err := Tune(ctx, s)
	tuneCheckpointWritten = nil
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "--resume") || !TuneCheckpointOf(out) {
		t.Fatalf("interrupted: %v (state kept: %v)", err, TuneCheckpointOf(out))
	}
	rel, ran, err := resumeTune(t, out, nil)
	if err != nil || rel.Model == nil {
		t.Fatalf("resume: %v", err)
	}
	if ran != 1 {
		t.Errorf("the resume ran %d runs, want the one left", ran)
	}
	b, err := budget.Load(s.Budget)
	if err != nil || len(b.Releases) != 1 || b.Releases[0].Status != budget.Done {
		t.Fatalf("budget %+v, %v: want the interrupted tuning's one charge", b.Releases, err)
	}
}

// A resume is refused, with an error wrapping ErrInvalid and the tuning's
// files kept, for: no unfinished tuning, an edited state or run file, a
// state copied from elsewhere, another build, settings changed since,
// other data, a second process on it, and a vote tuning; a new tuning into
// a directory with an unfinished one is refused too.
func TestTuneResumeRefusals(t *testing.T) {
	if testing.Short() {
		t.Skip("tunes")
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := ResumeTuneSpec(out); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "no unfinished tuning") {
		t.Errorf("nothing to resume: %v", err)
	}
	s := resumableTunings(t, out)[tuning.GridName]
	_, points, _ := tuneWithKillPoints(t, s)
	kp := points[len(points)-1] // after the last run
	refused := func(name, want string, err error) {
		t.Helper()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want a one-line refusal containing %q", name, err, want)
		}
		if !TuneCheckpointOf(out) {
			t.Errorf("%s: the refused tuning's state is gone", name)
		}
	}
	key, err := checkpointKey(false)
	if err != nil {
		t.Fatal(err)
	}
	rewrite := func(f func(*tuneState)) {
		st, err := readTuneState(s.Checkpoint, key)
		if err != nil {
			t.Fatal(err)
		}
		f(st)
		if err := writeTuneState(s.Checkpoint, key, st); err != nil {
			t.Fatal(err)
		}
	}
	flip := func(path string) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)-2] ^= 1
		os.WriteFile(path, b, 0o600)
	}

	restore(t, kp, s)
	_, _, err = Tune(context.Background(), s)
	refused("a new tuning over an unfinished one", "holds an unfinished tuning", err)

	flip(filepath.Join(s.Checkpoint, tuneStateFile))
	_, err = ResumeTuneSpec(out)
	refused("an edited state", "authentication code does not match", err)

	restore(t, kp, s)
	runs, _ := filepath.Glob(filepath.Join(s.Checkpoint, "*"+tuneRunExt))
	flip(runs[0])
	_, err = ResumeTuneSpec(out)
	refused("an edited run", "authentication code does not match", err)

	restore(t, kp, s)
	rewrite(func(st *tuneState) { st.Build = "vcs.revision 0123456789abcdef" })
	_, err = ResumeTuneSpec(out)
	refused("another build", "build differs", err)

	restore(t, kp, s)
	copied := filepath.Join(t.TempDir(), "elsewhere")
	copyTree(t, filepath.Dir(s.Checkpoint), CuratorDir(copied))
	_, err = ResumeTuneSpec(copied)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "copied") {
		t.Errorf("a copied state: %v", err)
	}

	_, _, err = resumeTune(t, out, func(s *TuneSpec) { s.Epochs = 2 })
	refused("other settings", "settings differ in epochs (1 in the tuning it continues, 2 here)", err)
	_, _, err = resumeTune(t, out, func(s *TuneSpec) { s.Epsilon = 5 })
	refused("another budget", "settings differ in epsilon", err)

	unlock, err := fsx.TryLock(filepath.Join(s.Checkpoint, checkpointLock))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = resumeTune(t, out, nil)
	refused("a second process", "in use", err)
	unlock()

	other := resumeSource(t, writeMNISTFiles(t, 601), 600) // one example more
	os.RemoveAll(s.Data.Dir)
	if err := os.Rename(other.Dir, s.Data.Dir); err != nil {
		t.Fatal(err)
	}
	_, _, err = resumeTune(t, out, nil)
	refused("other data", "digest differs", err)

	vote := filepath.Join(t.TempDir(), "vote")
	end, err := MarkVoteTuning(vote, tuning.VoteName)
	if err != nil {
		t.Fatal(err)
	}
	_ = end // killed: the vote never ends
	if _, err := ResumeTuneSpec(vote); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "cannot be resumed") {
		t.Errorf("a killed vote: %v", err)
	}
	if _, err := os.Stat(filepath.Join(TuneCheckpointPath(vote), tuneStateFile)); err != nil {
		t.Errorf("the refused vote's mark is gone: %v", err)
	}
}

// copyTree copies the directories and regular files of src into dst
// (created 0700), as they are at this moment: one that vanished meanwhile
// is skipped.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o700); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			copyTree(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
		} else if e.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
