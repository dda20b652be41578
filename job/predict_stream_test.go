package job

import (
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// saveTinyModel saves a network reading 1×side×side images into two
// classes "a" and "b" (flatten, linear) and returns its directory: a
// cheap forward pass, so that a test's time goes to PredictStream itself.
// One image's float32 tensors are 4 × (side² + 2) bytes.
func saveTinyModel(t *testing.T, side int) string {
	t.Helper()
	spec := model.Spec{Name: "tiny", Layers: []model.LayerSpec{model.Flatten(), model.Linear(2)}}
	arch, err := model.NewArch(spec, 1, side, side, 2)
	if err != nil {
		t.Fatal(err)
	}
	net, err := model.New(arch, randsrc.Seeded(3, "predict stream net"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := net.Save(dir, model.Metadata{Input: &model.Input{Dataset: "test", Classes: []string{"a", "b"}}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writeTinyPNG writes a 1×1 grey PNG of value v at path.
func writeTinyPNG(t *testing.T, path string, v uint8) {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 1, 1))
	img.Pix[0] = v
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

// countingDecoder replaces decodeImage for the test with one that writes
// a constant and counts its calls, restoring the real one at the end.
func countingDecoder(t *testing.T) *int {
	t.Helper()
	n := new(int)
	old := decodeImage
	decodeImage = func(path string, o data.FolderOptions, dst []float32) error {
		*n++
		for i := range dst {
			dst[i] = 0.5
		}
		return nil
	}
	t.Cleanup(func() { decodeImage = old })
	return n
}

// liveHeap is the heap in use after a collection, in bytes.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// A path list of a million files is labelled in bounded memory: the list
// is ranged over as it comes (a generator here, never a slice), the
// images decoded and not yet emitted never pass what the bound allows a
// batch, and at every 100,000th prediction the live heap is as it was at
// the 100,000th (within 64 KiB) and within 5/4 of what a batch is allowed
// (its names, 1 MiB here, and its images' float32 tensors; the quarter
// for allocation size classes and slice capacity) and 256 KiB of fixed
// state (the model, the engine, the walk) of what it was before the call.
// Keeping the paths would hold about 100 MB by the end; keeping a batch's
// predictions until it is emitted, about 1 MB more. The decoder is a counter (decoding a million PNGs is
// not what is tested) and the model a 1×1 linear one; every path names
// one real file, each a string of its own, so every other step runs as
// it does for the command.
func TestPredictStreamMillionPathsBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("labels a million paths")
	}
	const n = 1_000_000
	const bound = 8 << 20
	m := saveTinyModel(t, 1)
	img := filepath.Join(t.TempDir(), "one.png")
	writeTinyPNG(t, img, 7)
	decoded := countingDecoder(t)
	paths := func(yield func(string, error) bool) {
		for range n {
			if !yield(strings.Clone(img), nil) {
				return
			}
		}
	}
	// A batch holds at most bound/(4 × (1 pixel + 2 logits)) images by its
	// tensors and (bound/8)/(16 + len(img)) by its names: here the names
	// bind.
	const perImage = 4 * (1 + 2)
	maxBatch := min(bound/perImage, bound/8/(16+len(img)))
	var st PredictProgress
	pending := 0
	before := liveHeap()
	allowed := int64(bound/8+maxBatch*perImage)*5/4 + 256<<10
	var first, lo, hi int64
	emitted := 0
	err := PredictStream(context.Background(), PredictConfig{Model: m, Paths: paths, BatchBytes: bound,
		Progress: func(p PredictProgress) {
			st = p
			pending = max(pending, p.Read-p.Labelled)
		}},
		func(p Prediction) error {
			emitted++
			if p.Path != img || (p.Label != "a" && p.Label != "b") {
				return fmt.Errorf("prediction %d: %+v", emitted, p)
			}
			if emitted%100_000 == 0 {
				g := liveHeap() - before
				if emitted == 100_000 {
					first, lo, hi = g, g, g
				}
				lo, hi = min(lo, g), max(hi, g)
				if g > allowed || g > first+64<<10 {
					t.Errorf("at prediction %d the live heap grew by %d KiB: more than %d KiB or 64 KiB more than at the 100,000th (%d KiB)", emitted, g>>10, allowed>>10, first>>10)
				}
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d images, at most %d decoded and not yet labelled (a batch may hold %d); live heap %d … %d KiB above its start (allowed %d KiB)",
		emitted, pending, maxBatch, lo>>10, hi>>10, allowed>>10)
	if emitted != n || *decoded != n || st.Read != n || st.Labelled != n || st.Total != -1 {
		t.Errorf("emitted %d, decoded %d, progress %+v; want %d each and total -1", emitted, *decoded, st, n)
	}
	if pending > maxBatch || pending < 1 {
		t.Errorf("%d images held at once, want 1 … %d", pending, maxBatch)
	}
}

// An image that does not decode ends the run once every image before it
// has been emitted (the batch under way included), naming it and wrapping
// ErrInvalid; a path that does not exist in the middle of the list is
// found when reached without Count, and with Count before any image is
// decoded.
func TestPredictStreamErrorEmitsTheImagesBefore(t *testing.T) {
	m := saveTinyModel(t, 16)
	dir := t.TempDir()
	var files []string
	for i := range 7 {
		f := filepath.Join(dir, fmt.Sprintf("%d.png", i))
		writeTinyPNG(t, f, uint8(30*i))
		files = append(files, f)
	}
	bad := filepath.Join(dir, "4.png")
	if err := os.WriteFile(bad, []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.png")
	withMissing := slices.Concat(files[:5], []string{missing}, files[5:])
	for _, tc := range []struct {
		name      string
		paths     []string
		count     bool
		culprit   string
		wantPaths []string // emitted before the error
	}{
		{"undecodable", files, false, bad, files[:4]},
		{"undecodable, counted", files, true, bad, files[:4]},
		{"missing", withMissing, false, bad, files[:4]}, // 4.png fails first
		{"missing, counted", withMissing, true, missing, nil},
		{"missing after the good", append(slices.Clone(files[:4]), missing), false, missing, files[:4]},
	} {
		var got []string
		read := 0
		// Three images a batch: 0–2 are a whole batch, 3 the start of one.
		err := PredictStream(context.Background(), PredictConfig{Model: m, Paths: pathSeq(tc.paths), Count: tc.count, BatchBytes: 3 * 4 * (16*16 + 2),
			Progress: func(p PredictProgress) { read = p.Read }},
			func(p Prediction) error {
				got = append(got, p.Path)
				return nil
			})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.culprit) {
			t.Errorf("%s: error %v, want ErrInvalid naming %s", tc.name, err, tc.culprit)
		}
		if !slices.Equal(got, tc.wantPaths) {
			t.Errorf("%s: emitted %q, want %q", tc.name, got, tc.wantPaths)
		}
		if tc.name == "missing, counted" && read != 0 {
			t.Errorf("%s: %d images read before the refusal", tc.name, read)
		}
	}
}

// No path gives no prediction and no error, with or without counting; a
// list that fails ends the run with its error, after the images before it.
func TestPredictStreamNoPathsAndListErrors(t *testing.T) {
	m := saveTinyModel(t, 16)
	for _, c := range []PredictConfig{{Model: m}, {Model: m, Count: true}, {Model: m, Paths: pathSeq(nil), Count: true}} {
		var last PredictProgress
		c.Progress = func(p PredictProgress) { last = p }
		emitted := 0
		if err := PredictStream(context.Background(), c, func(Prediction) error { emitted++; return nil }); err != nil || emitted != 0 {
			t.Errorf("count %v: %d predictions, error %v; want none", c.Count, emitted, err)
		}
		if last != (PredictProgress{}) {
			t.Errorf("count %v: progress %+v for no image", c.Count, last)
		}
	}
	img := filepath.Join(t.TempDir(), "a.png")
	writeTinyPNG(t, img, 1)
	listErr := errors.New("the list: read error")
	list := func(yield func(string, error) bool) {
		if yield(img, nil) && yield(img, nil) {
			yield("", listErr)
		}
	}
	emitted := 0
	err := PredictStream(context.Background(), PredictConfig{Model: m, Paths: list}, func(Prediction) error { emitted++; return nil })
	if !errors.Is(err, listErr) || !errors.Is(err, ErrInvalid) || emitted != 2 {
		t.Errorf("a failing list: %d predictions, error %v; want 2 and the list's error", emitted, err)
	}
	if err := PredictStream(context.Background(), PredictConfig{Model: m, BatchBytes: -1}, func(Prediction) error { return nil }); !errors.Is(err, ErrInvalid) {
		t.Errorf("a negative bound: %v", err)
	}
}

// Progress counts the images first when asked, reports each image read
// and each batch labelled before its predictions are emitted, and the
// batches follow the bound: with room for two images' tensors, five
// images are labelled 2, 2, 1.
func TestPredictStreamProgress(t *testing.T) {
	m := saveTinyModel(t, 16)
	dir := t.TempDir()
	for i := range 5 {
		writeTinyPNG(t, filepath.Join(dir, fmt.Sprintf("%d.png", i)), uint8(i))
	}
	var log []string
	err := PredictStream(context.Background(), PredictConfig{Model: m, Paths: pathSeq([]string{dir}), Count: true, BatchBytes: 2 * 4 * (16*16 + 2),
		Progress: func(p PredictProgress) { log = append(log, fmt.Sprintf("%d/%d/%d", p.Read, p.Labelled, p.Total)) }},
		func(p Prediction) error {
			log = append(log, "emit "+filepath.Base(p.Path))
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1/0/5", "2/0/5", "2/2/5", "emit 0.png", "emit 1.png", "3/2/5", "4/2/5", "4/4/5", "emit 2.png", "emit 3.png", "5/4/5", "5/5/5", "emit 4.png"}
	if !slices.Equal(log, want) {
		t.Errorf("progress and emits\n%q\nwant\n%q", log, want)
	}
}
