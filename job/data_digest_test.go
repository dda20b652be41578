package job

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// copySet is a deep copy of d.
func copySet(d *data.Dataset) *data.Dataset {
	c := *d
	c.X, c.Y = append([]float32(nil), d.X...), append([]uint8(nil), d.Y...)
	return &c
}

// The keyed digest is a function of the content and the public settings:
// equal for equal tensors (a copy, another name for the set), different
// when one pixel moves by one float32 step, one label changes, the key
// changes, or any setting that made the tensors changes (the dataset, its
// subset, an image folder's shape, resizing, pixel constants or nominal
// size); and what a job carries holds neither the content sum nor the
// pixels.
func TestContentDigest(t *testing.T) {
	train, test := noiseImages(300, 1), noiseImages(50, 2)
	folder := folderRef{C: 1, H: 28, W: 28, Mean: []float64{0.1}, Std: []float64{0.3}, NominalN: 300}
	id := contentID{Dataset: "folder:digits", Folder: &folder}
	key := randsrc.Key{1}
	mac := func(id contentID, k randsrc.Key, train, test *data.Dataset) string {
		return macOf(k, contentSum(id, train, test))
	}
	base := mac(id, key, train, test)

	renamed := copySet(train)
	renamed.Name = "elsewhere/train"
	if got := mac(id, key, renamed, copySet(test)); got != base {
		t.Errorf("a copy of the same tensors has another digest: %s, want %s", got, base)
	}
	pixel := copySet(train)
	pixel.X[1234] = math.Nextafter32(pixel.X[1234], float32(math.Inf(1)))
	label := copySet(train)
	label.Y[7] = (label.Y[7] + 1) % uint8(label.Classes)
	testPixel := copySet(test)
	testPixel.X[0] = math.Nextafter32(testPixel.X[0], float32(math.Inf(-1)))
	with := func(f func(*folderRef)) contentID {
		g := folder
		g.Mean, g.Std = append([]float64(nil), folder.Mean...), append([]float64(nil), folder.Std...)
		f(&g)
		return contentID{Dataset: id.Dataset, Folder: &g}
	}
	differ := map[string]string{
		"one training pixel one step up": mac(id, key, pixel, test),
		"one training label":             mac(id, key, label, test),
		"one test pixel one step down":   mac(id, key, train, testPixel),
		"no test set":                    mac(id, key, train, nil),
		"another key":                    mac(id, randsrc.Key{2}, train, test),
		"another dataset name":           mac(contentID{Dataset: "folder:other", Folder: &folder}, key, train, test),
		"a fixed subset":                 mac(contentID{Dataset: id.Dataset, Folder: &folder, Subset: &Subset{Fraction: 0.5, Key: 3}}, key, train, test),
		"another mean":                   mac(with(func(g *folderRef) { g.Mean[0] = 0.2 }), key, train, test),
		"another deviation":              mac(with(func(g *folderRef) { g.Std[0] = 0.31 }), key, train, test),
		"no resizing":                    mac(with(func(g *folderRef) { g.NoResize = true }), key, train, test),
		"another shape":                  mac(with(func(g *folderRef) { g.C = 3 }), key, train, test),
		"another nominal size":           mac(with(func(g *folderRef) { g.NominalN = 301 }), key, train, test),
		"no folder settings":             mac(contentID{Dataset: id.Dataset}, key, train, test),
	}
	seen := map[string]string{base: "the base"}
	for what, got := range differ {
		if prev, dup := seen[got]; dup {
			t.Errorf("%s: the digest equals that of %s", what, prev)
		}
		seen[got] = what
	}

	// What a job carries: the key and the MAC, never the content sum.
	sum := contentSum(id, train, test)
	d := keyedDigest{Key: key, MAC: base}
	b, _ := json.Marshal(d)
	if strings.Contains(string(b), hex.EncodeToString(sum[:])) {
		t.Errorf("the digest a job carries holds the unkeyed content sum: %s", b)
	}
	if !d.matches(sum) || d.matches(contentSum(id, pixel, test)) {
		t.Error("matches does not tell the content apart")
	}
}

// noiseFolder writes an image folder called name of ten classes, "0" …
// "9", with perClass random 12×12 grey training images and two test
// images each, a class's images brighter in its own row.
func noiseFolder(t *testing.T, name string, perClass int, seed uint64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	rng := rand.New(rand.NewPCG(seed, 7))
	for c := range 10 {
		for i := range perClass + 2 {
			img := image.NewGray(image.Rect(0, 0, 12, 12))
			for k := range img.Pix {
				v := rng.IntN(128)
				if k/12 == c {
					v += 127
				}
				img.Pix[k] = uint8(v)
			}
			split, file := "train", fmt.Sprintf("%03d.png", i)
			if i >= perClass {
				split = "test"
			}
			writeFolderPNG(t, filepath.Join(dir, split, fmt.Sprint(c), file), img)
		}
	}
	return dir
}

// copyFolder copies the image folder src to a new directory.
func copyFolder(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// touchPixel rewrites the PNG at path with its first pixel changed, and
// moves its modification time, as an edit would.
func touchPixel(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	img, _, err := image.Decode(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	g := image.NewGray(img.Bounds())
	for y := range g.Rect.Dy() {
		for x := range g.Rect.Dx() {
			g.Set(x, y, img.At(x, y))
		}
	}
	g.SetGray(0, 0, color.Gray{Y: g.GrayAt(0, 0).Y ^ 0x40})
	writeFolderPNG(t, path, g)
}

// resetDataCache empties this process's data cache: a fresh worker.
func resetDataCache(t *testing.T) {
	t.Helper()
	dataCache.Lock()
	dataCache.keys, dataCache.m = nil, map[string]loaded{}
	dataCache.Unlock()
}

// workerDir makes this process's jobs read image folders from dir (""
// the curator's), until the test ends.
func workerDir(t *testing.T, dir string) {
	t.Helper()
	if dir == "" {
		workerDirs.Delete(FolderName)
	} else {
		WorkerDataDir(FolderName, dir)
	}
	t.Cleanup(func() { workerDirs.Delete(FolderName) })
}

// workers is runner.Remote in this process: each job runs as on a fresh
// worker (empty data and audit caches) that reads image folders from dir.
type workers struct {
	key  [32]byte
	dir  string
	jobs *[]runner.Task
}

func (w workers) Key() [32]byte { return w.key }
func (w workers) Resumed() bool { return false }
func (w workers) OnWorkers()    {}
func (w workers) Run(ctx context.Context, ts []runner.Task, done func(int, []byte) error) error {
	for i, task := range ts {
		*w.jobs = append(*w.jobs, task)
		dataCache.Lock()
		dataCache.keys, dataCache.m = nil, map[string]loaded{}
		dataCache.Unlock()
		protocols.Lock()
		protocols.key, protocols.p = "", nil
		protocols.Unlock()
		WorkerDataDir(FolderName, w.dir)
		out, err := runner.Do(runner.OnWorker(ctx), task.Kind, task.Input)
		workerDirs.Delete(FolderName)
		if err != nil {
			return err
		}
		if err := done(i, out); err != nil {
			return err
		}
	}
	return nil
}

// linearSpec is a small network for 12×12 images of ten classes.
var linearSpec = model.Spec{Name: "linear", Layers: []model.LayerSpec{model.Flatten(), model.Linear(10)}}

// A worker reads an image folder as the curator's job says and checks its
// copy against the job's keyed digest: a copy elsewhere with the same
// images trains; one whose single training pixel differs is refused with
// one line naming the dataset (runner.ErrInvalidInput: not retried), again
// for the next job; a copy the worker kept in memory before the curator
// changed the files is read again, so it trains on the new files.
func TestWorkerChecksItsCopy(t *testing.T) {
	dir := noiseFolder(t, "digits", 12, 1)
	src, _, err := folderDataset(dir, &linearSpec, 120, FolderSettings{Mean: []float64{0.5}, Std: []float64{0.25}})
	if err != nil {
		t.Fatal(err)
	}
	if local := src.ForRunner(runner.Local{}); local.check != nil || local.ref().Digest != nil {
		t.Fatal("jobs in this process carry a digest")
	}
	remote := workers{key: [32]byte{5}}
	curator := func() (dataRef, *data.Dataset, *data.Dataset) {
		s := src.ForRunner(remote)
		train, test, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		return s.ref(), train, test
	}
	ref, train, test := curator()
	if ref.Digest == nil || ref.Folder == nil || ref.Folder.Mean[0] != 0.5 || ref.Folder.H != 12 || ref.Folder.NominalN != 120 {
		t.Fatalf("the job's data: %+v", ref)
	}
	same := func(what string, a, b *data.Dataset) {
		t.Helper()
		if a == nil || b == nil || !reflect.DeepEqual(a.X, b.X) || !reflect.DeepEqual(a.Y, b.Y) {
			t.Errorf("%s: the worker's sets are not the curator's", what)
		}
	}

	// A copy at another path, with the same images: trains.
	cp := copyFolder(t, dir)
	resetDataCache(t)
	workerDir(t, cp)
	wtrain, wtest, err := ref.raw()
	if err != nil {
		t.Fatal(err)
	}
	same("copy: training set", wtrain, train)
	same("copy: test set", wtest, test)

	// One pixel of one training image differs: refused, and refused again.
	touchPixel(t, filepath.Join(cp, "train", "3", "005.png"))
	want := dataDiffers(src.Name).Error()
	for _, worker := range []string{"a fresh worker", "the same worker, next job"} {
		if worker == "a fresh worker" {
			resetDataCache(t)
		}
		_, _, err := ref.raw()
		if !errors.Is(err, runner.ErrInvalidInput) || err.Error() != want || strings.Contains(want, "\n") {
			t.Errorf("%s with a changed copy: %v, want %q wrapping runner.ErrInvalidInput", worker, err, want)
		}
	}
	if !strings.Contains(want, src.Name) || !strings.Contains(want, "differs from the curator's") {
		t.Errorf("the refusal does not name the dataset or say the copy differs: %s", want)
	}

	// The curator's own files change after a worker kept them in memory.
	resetDataCache(t)
	workerDir(t, "")
	if _, _, err := ref.raw(); err != nil {
		t.Fatal(err)
	}
	touchPixel(t, filepath.Join(dir, "test", "0", "012.png"))
	ref2, train2, test2 := curator()
	if ref2.Digest.MAC == ref.Digest.MAC || ref2.Digest.Key != ref.Digest.Key {
		t.Fatalf("the changed files have the same digest, or the invocation another key")
	}
	wtrain, wtest, err = ref2.raw()
	if err != nil {
		t.Fatalf("a worker that kept the old files: %v", err)
	}
	same("changed files: training set", wtrain, train2)
	same("changed files: test set", wtest, test2)
	if _, _, err := ref.raw(); !errors.Is(err, runner.ErrInvalidInput) {
		t.Errorf("the old digest on the new files: %v", err)
	}
}

// A seeded tuning of an image folder on workers releases what it releases
// on this process's runner, its jobs carrying the folder's settings and
// the keyed digest; a worker whose copy differs fails the tuning with the
// one-line refusal, not retried.
func TestTuneOnWorkersChecksData(t *testing.T) {
	dir := noiseFolder(t, "digits", 40, 2)
	src, _, err := folderDataset(dir, &linearSpec, 400, FolderSettings{})
	if err != nil {
		t.Fatal(err)
	}
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1, 0.5}}}}
	tune := func(r runner.Runner) (*Release, error) {
		seed := uint64(3)
		rel, _, err := Tune(context.Background(), TuneSpec{Data: src, Tuner: "randomstop", Space: space, Epsilon: 8, Delta: 1e-5,
			Epochs: 1, BatchSize: 30, Repetitions: accounting.PoissonRepetitions(3), Validation: "private", ValSize: 100,
			ScoreNoise: 5, Seed: &seed, Runner: r})
		return rel, err
	}
	start := time.Now()
	local, err := tune(runner.Local{})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []runner.Task
	onWorkers, err := tune(workers{key: [32]byte{9}, dir: copyFolder(t, dir), jobs: &jobs})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(local.Report)
	b, _ := json.Marshal(onWorkers.Report)
	if string(a) != string(b) || !reflect.DeepEqual(local.Model.Params, onWorkers.Model.Params) {
		t.Errorf("the release on workers differs from this process's:\n%s\n%s", a, b)
	}
	if len(jobs) == 0 {
		t.Fatal("no jobs ran on the workers")
	}
	for _, j := range jobs {
		var in struct {
			Data dataRef `json:"data"`
		}
		if err := json.Unmarshal(j.Input, &in); err != nil || in.Data.Digest == nil || in.Data.Folder == nil {
			t.Fatalf("job %s: %v, data %+v", j.ID, err, in.Data)
		}
	}

	changed := copyFolder(t, dir)
	touchPixel(t, filepath.Join(changed, "train", "7", "000.png"))
	jobs = nil
	_, err = tune(workers{key: [32]byte{9}, dir: changed, jobs: &jobs})
	if !errors.Is(err, runner.ErrInvalidInput) || !strings.Contains(err.Error(), dataDiffers(src.Name).Error()) {
		t.Errorf("a worker with a changed copy: %v", err)
	}
	if len(jobs) != 1 {
		t.Errorf("%d jobs ran after the first was refused", len(jobs))
	}
	t.Logf("three tunings in %.1f s", time.Since(start).Seconds())
}

// writeIDX writes n random 28×28 MNIST-format training images and labels
// and ten test ones to dir, the training image first's first pixel set to
// first.
func writeIDX(t *testing.T, dir string, n int, first byte) {
	t.Helper()
	rng := rand.New(rand.NewPCG(4, 5))
	for _, f := range []struct {
		name string
		n    int
	}{{"train", n}, {"t10k", 10}} {
		imgs := []byte{0, 0, 8, 3, 0, 0, 0, byte(f.n), 0, 0, 0, 28, 0, 0, 0, 28}
		labels := []byte{0, 0, 8, 1, 0, 0, 0, byte(f.n)}
		for range f.n * 784 {
			imgs = append(imgs, byte(rng.IntN(256)))
		}
		for range f.n {
			labels = append(labels, byte(rng.IntN(10)))
		}
		if f.name == "train" {
			imgs[16] = first
		}
		if err := os.WriteFile(filepath.Join(dir, f.name+"-images-idx3-ubyte"), imgs, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.name+"-labels-idx1-ubyte"), labels, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The stale cache: a worker that kept a registered dataset in memory by
// name trains on the files the curator changed since (read again when the
// job's digest is not its copy's), never on the old ones; without a digest
// (jobs in the curator's process) the cache is used as before.
func TestWorkerReadsChangedFilesAgain(t *testing.T) {
	dir := t.TempDir()
	writeIDX(t, dir, 30, 0)
	src, err := Dataset("mnist", dir)
	if err != nil {
		t.Fatal(err)
	}
	remote := workers{key: [32]byte{7}}
	curator := func() (dataRef, *data.Dataset) {
		s := src.ForRunner(remote)
		train, _, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		return s.ref(), train
	}
	resetDataCache(t)
	old, oldTrain := curator()
	if got, _, err := old.raw(); err != nil || !reflect.DeepEqual(got.X, oldTrain.X) {
		t.Fatalf("the worker's first read: %v", err)
	}
	writeIDX(t, dir, 30, 255)
	changed, newTrain := curator()
	if reflect.DeepEqual(newTrain.X, oldTrain.X) {
		t.Fatal("the files did not change")
	}
	if stale, _, err := (dataRef{Dataset: old.Dataset, Dir: old.Dir}).raw(); err != nil || !reflect.DeepEqual(stale.X, oldTrain.X) {
		t.Errorf("without a digest the cache is not what it was: %v", err)
	}
	got, _, err := changed.raw()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.X, newTrain.X) {
		t.Error("the worker trains on the files as they were before the curator changed them")
	}
}

// The doubling tuner's part runs and an audit's blocks of trials on
// workers: their jobs carry the folder's settings and the keyed digest, a
// worker with the curator's images gives the release (or the audit) this
// process's runner gives, and a worker whose copy differs by one training
// image fails them with the refusal.
func TestPartRunsAndTrialsOnWorkersCheckData(t *testing.T) {
	dir := noiseFolder(t, "digits", 40, 3)
	src, _, err := folderDataset(dir, &linearSpec, 400, FolderSettings{})
	if err != nil {
		t.Fatal(err)
	}
	same, changed := copyFolder(t, dir), copyFolder(t, dir)
	touchPixel(t, filepath.Join(changed, "train", "2", "011.png"))
	checkJobs := func(what string, jobs []runner.Task) {
		t.Helper()
		if len(jobs) == 0 {
			t.Fatalf("%s: no jobs ran on the workers", what)
		}
		for _, j := range jobs {
			var in struct {
				Data *dataRef `json:"data"`
			}
			if err := json.Unmarshal(j.Input, &in); err != nil || in.Data == nil || in.Data.Digest == nil || in.Data.Folder == nil {
				t.Fatalf("%s: job %s: %v, data %+v", what, j.ID, err, in.Data)
			}
		}
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, runner.ErrInvalidInput) || !strings.Contains(err.Error(), dataDiffers(src.Name).Error()) {
			t.Errorf("%s with a changed copy: %v", what, err)
		}
	}

	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1, 0.5}}, {Name: tuning.ClipNorm, Values: []float64{1}}}}
	doubling := func(r runner.Runner) (*Release, error) {
		seed := uint64(4)
		rel, _, err := Tune(context.Background(), TuneSpec{Data: src, Tuner: "doubling", Space: space, Epsilon: 8, Delta: 1e-5, Epochs: 1,
			BatchSize: 30, ValSize: 100, Seed: &seed, Runner: r,
			Options: tuning.DoublingOptions{Partitions: 2, Epsilon0: 0.2, Granularity: 0.2, MaxIterations: 4, PartEpochs: 1}.Values()})
		return rel, err
	}
	local, err := doubling(runner.Local{})
	if err != nil {
		t.Fatal(err)
	}
	var jobs []runner.Task
	there, err := doubling(workers{key: [32]byte{3}, dir: same, jobs: &jobs})
	if err != nil {
		t.Fatal(err)
	}
	checkJobs("doubling", jobs)
	a, _ := json.Marshal(local.Report)
	b, _ := json.Marshal(there.Report)
	if string(a) != string(b) || !reflect.DeepEqual(local.Model.Params, there.Model.Params) {
		t.Errorf("the doubling tuner's release on workers differs from this process's:\n%s\n%s", a, b)
	}
	_, err = doubling(workers{key: [32]byte{3}, dir: changed, jobs: new([]runner.Task)})
	refused("doubling", err)

	audit := func(r runner.Runner) (*AuditResult, error) {
		return Audit(context.Background(), AuditSpec{Protocol: AuditNatural, Trials: 4, Seed: 1, Delta: 1e-5, Confidence: 0.95, Data: src, Size: 20,
			NoiseMultiplier: 1, SamplingRate: 0.5, ClipNorm: 1, Steps: 3, LearningRate: 0.5, Runner: r})
	}
	jobs = nil
	if _, err := audit(workers{key: [32]byte{4}, dir: same, jobs: &jobs}); err != nil {
		t.Fatal(err)
	}
	checkJobs("audit", jobs)
	_, err = audit(workers{key: [32]byte{4}, dir: changed, jobs: new([]runner.Task)})
	refused("audit", err)
}
