package job

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"iter"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/model/features"
)

// Prediction is a saved model's label for one image: the class's name
// (the dataset's or the image folder's; its index when the model has no
// names), its index and the softmax probability of every class.
//
// Its JSON (MarshalJSON) is {"path", "label", "index", "probabilities"},
// and for a file name that is not valid UTF-8 also "path_bytes": the name's
// exact bytes in base64, which every JSON reader can turn back into the
// name. "path" is then the name as Python's os.fsdecode reads it (PEP 383's
// surrogateescape): each byte b that is not part of valid UTF-8 written as
// the escape \udcXX of U+DC00 + b, so that Python's json.load gives the
// str that os.fsencode, open and os.stat take for that very file. A reader
// without surrogateescape (Go's encoding/json turns the escape into
// U+FFFD) should take "path_bytes" when present.
type Prediction struct {
	Path          string    `json:"path"`
	Label         string    `json:"label"`
	Index         int       `json:"index"`
	Probabilities []float64 `json:"probabilities"`
}

// predictionJSON is a Prediction's JSON form.
type predictionJSON struct {
	Path          json.RawMessage `json:"path"`
	PathBytes     []byte          `json:"path_bytes,omitempty"`
	Label         string          `json:"label"`
	Index         int             `json:"index"`
	Probabilities []float64       `json:"probabilities"`
}

// MarshalJSON writes p as the Prediction documentation describes: "path"
// as given when it is valid UTF-8, else surrogate-escaped with
// "path_bytes" beside it.
func (p Prediction) MarshalJSON() ([]byte, error) {
	out := predictionJSON{Path: surrogateEscaped(p.Path), Label: p.Label, Index: p.Index, Probabilities: p.Probabilities}
	if !utf8.ValidString(p.Path) {
		out.PathBytes = []byte(p.Path)
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes: the path from "path_bytes"
// when present, else from "path".
func (p *Prediction) UnmarshalJSON(b []byte) error {
	var in predictionJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*p = Prediction{Label: in.Label, Index: in.Index, Probabilities: in.Probabilities}
	if in.PathBytes != nil {
		p.Path = string(in.PathBytes)
		return nil
	}
	return json.Unmarshal(in.Path, &p.Path)
}

// surrogateEscaped is s as a JSON string literal, each byte that is not
// part of valid UTF-8 written as \udcXX (U+DC00 + the byte: PEP 383's
// surrogateescape).
func surrogateEscaped(s string) json.RawMessage {
	b := []byte{'"'}
	for len(s) > 0 {
		n := 0
		for n < len(s) {
			r, size := utf8.DecodeRuneInString(s[n:])
			if r == utf8.RuneError && size == 1 {
				break
			}
			n += size
		}
		if n > 0 {
			q, _ := json.Marshal(s[:n]) // valid UTF-8: marshalled unchanged
			b = append(b, q[1:len(q)-1]...)
			s = s[n:]
			continue
		}
		b = fmt.Appendf(b, `\udc%02x`, s[0])
		s = s[1:]
	}
	return append(b, '"')
}

// predictBatchBytes bounds the float32 tensors one batch of PredictStream
// holds (the decoded images, their front end's features and their
// logits) when PredictConfig.BatchBytes is 0; the batch's file names are
// bounded apart, by an eighth of it.
var predictBatchBytes = 64 << 20

// decodeImage reads one image file into a batch: data.DecodeImage, which
// tests replace with a counter.
var decodeImage = data.DecodeImage

// PredictConfig says which saved model labels which images, for
// PredictStream.
type PredictConfig struct {
	// Model is a directory written by dptune train or tune.
	Model string
	// Paths yields the image files and directories to label, in order;
	// each is a file in a format an image folder is read in
	// (data.FolderFormats: PNG, JPEG, GIF, TIFF), or a directory whose
	// .png, .jpg, .jpeg, .gif, .tif and .tiff files (case-insensitive, not
	// hidden, any depth, in lexical order) are read. The first error it
	// yields (a list of paths that cannot be read) ends the run. Nil
	// yields nothing.
	Paths iter.Seq2[string, error]
	// Count, when true, ranges over Paths a first time before any image is
	// read: every path is checked (it exists; a directory holds an image)
	// and the images are counted, for PredictProgress.Total. Paths must
	// then yield the same paths each time it is ranged over (a slice, a
	// file read anew); counting keeps no list, only the number.
	Count bool
	// BatchBytes bounds one batch: its float32 tensors (the images at the
	// model's input size, the front end's features, the logits) to
	// BatchBytes bytes, its file names to BatchBytes/8; a batch holds at
	// least one image. 0 means 64 MiB.
	BatchBytes int
	// Progress, if not nil, is called after each image is read and after
	// each batch is labelled, before that batch's predictions are emitted.
	Progress func(PredictProgress)
}

// PredictProgress is where a PredictStream run stands.
type PredictProgress struct {
	Read     int // images decoded so far
	Labelled int // images labelled so far; the last batch's are emitted next
	Total    int // images in all, counted first (PredictConfig.Count), else -1
}

// Predict labels images with the model saved in dir (by dptune train or
// tune) and returns their predictions in the order of paths:
// PredictEach, collected.
func Predict(ctx context.Context, dir string, paths []string, progress func(done, total int)) ([]Prediction, error) {
	var out []Prediction
	err := PredictEach(ctx, dir, paths, progress, func(p Prediction) error {
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PredictEach is PredictStream over the files and directories paths
// names, counted first (so that a path that does not exist or a directory
// without images is refused before any image is read), with progress
// called (done images read, of total) after each image is read.
func PredictEach(ctx context.Context, dir string, paths []string, progress func(done, total int), emit func(Prediction) error) error {
	c := PredictConfig{Model: dir, Paths: pathSeq(paths), Count: true}
	if progress != nil {
		last := 0
		c.Progress = func(p PredictProgress) {
			if p.Read != last {
				last = p.Read
				progress(p.Read, p.Total)
			}
		}
	}
	return PredictStream(ctx, c, emit)
}

// pathSeq yields paths, with no error.
func pathSeq(paths []string) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for _, p := range paths {
			if !yield(p, nil) {
				return
			}
		}
	}
}

// PredictStream labels the images c names with the model saved in
// c.Model and calls emit with each image's Prediction, in input order.
//
// Each image is read as the model's training data was (its channels,
// resized bilinearly to its input size, normalised with its recorded
// constants: model.Input; a model saved without them is read with its
// dataset's — MNIST's for 1×28×28 inputs, CIFAR-10's for 3×32×32), and
// the model's own forward pass (with its ScatterNet front end, if any)
// gives the probabilities.
//
// # Memory
//
// The paths are ranged over as they come, a directory walked as it is
// read (filepath.WalkDir, which holds the sorted entries of the
// directories it is in), and the images are decoded and labelled in
// batches: a batch ends before its float32 tensors (the images at the
// model's input size, the front end's features, the logits) would pass
// c.BatchBytes (64 MiB) or its file names an eighth of that, and is
// labelled and emitted, in order, before the next image is read; a batch
// holds at least one image. What PredictStream holds at once is one
// batch, one image being decoded (data.DecodeImage: a file of at most
// 64 MiB, 4096 × 4096 pixels) and the model, whatever the number of paths
// or the model's input size, and it retains nothing of a batch once it
// is emitted. A batch's tensors are at most c.BatchBytes unless one
// image's alone are more (a 3×4096×4096 input is 192 MiB of float32).
//
// # Errors
//
// It returns an error wrapping ErrInvalid, naming the path, for a model
// that does not load or whose parameters are not finite (before any path
// is read), for a path that does not exist or a directory that holds no
// image (before any image is read when c.Count is set, else when it is
// reached), for an error c.Paths yields, and for an image that does not
// decode; such an error after images were read comes once every image
// before it has been emitted, so that the predictions emitted are exactly
// those of the images before the failure. emit's error ends it and is
// returned; so is ctx's, checked before each image (the images of the
// batch under way are then not emitted). No path gives no prediction and
// no error.
func PredictStream(ctx context.Context, c PredictConfig, emit func(Prediction) error) error {
	bound := c.BatchBytes
	if bound < 0 {
		return invalidf("predict: batch bound %d bytes, not ≥ 0", bound)
	}
	if bound == 0 {
		bound = predictBatchBytes
	}
	net, in, err := loadPredictor(c.Model)
	if err != nil {
		return err
	}
	paths := c.Paths
	if paths == nil {
		paths = pathSeq(nil)
	}
	r := &predictRun{ctx: ctx, report: c.Progress, emit: emit, st: PredictProgress{Total: -1}}
	if c.Count {
		if r.st.Total, err = countImages(ctx, paths); err != nil {
			return err
		}
	}
	r.l = newLabeller(net, in, bound, r.st.Total)
	return r.run(paths)
}

// loadPredictor loads the model in dir, refusing one whose parameters are
// not finite, and the input its images are read as. Its errors wrap
// ErrInvalid.
func loadPredictor(dir string) (*model.Net, model.Input, error) {
	net, meta, err := model.Load(dir)
	if err != nil {
		return nil, model.Input{}, invalid(err)
	}
	if err := net.CheckFinite(); err != nil {
		return nil, model.Input{}, invalidf("the model in %s: %v", dir, err)
	}
	in, err := inputOf(net.Arch, meta)
	if err != nil {
		return nil, model.Input{}, invalidf("the model in %s: %v", dir, err)
	}
	return net, in, nil
}

// predictRun is a PredictStream under way: its labeller's batch, the
// progress so far and where it goes.
type predictRun struct {
	ctx    context.Context
	l      *labeller
	st     PredictProgress
	report func(PredictProgress) // nil: none
	emit   func(Prediction) error
}

// run reads the images of paths into batches, labelling and emitting each
// batch when the next image does not fit, and the last at the end.
func (r *predictRun) run(paths iter.Seq2[string, error]) error {
	l := r.l
	for path, err := range imagesIn(paths) {
		if err != nil {
			return r.fail(err)
		}
		if err := r.ctx.Err(); err != nil {
			return err
		}
		if !l.fits(path) {
			if err := r.flush(); err != nil {
				return err
			}
		}
		if err := decodeImage(path, l.opts, l.add(path)); err != nil {
			l.drop()
			return r.fail(err)
		}
		r.st.Read++
		r.progress()
	}
	return r.flush()
}

// progress reports the progress so far, if asked to.
func (r *predictRun) progress() {
	if r.report != nil {
		r.report(r.st)
	}
}

// flush labels the batch, reports it and emits its predictions.
func (r *predictRun) flush() error {
	l := r.l
	if len(l.paths) == 0 {
		return nil
	}
	logits, err := l.logits(r.ctx)
	if err != nil {
		return err
	}
	r.st.Labelled += len(l.paths)
	r.progress()
	for i := range l.paths {
		if err := r.emit(l.prediction(i, logits)); err != nil {
			return err
		}
	}
	l.reset()
	return nil
}

// fail emits the images before a failure, then returns it.
func (r *predictRun) fail(err error) error {
	if ferr := r.flush(); ferr != nil {
		return ferr
	}
	return invalid(err)
}

// countImages ranges over paths as PredictStream reads them and returns
// the number of images, or the first error: a path that does not exist, a
// directory without images, an error paths yields (wrapping ErrInvalid),
// or ctx's.
func countImages(ctx context.Context, paths iter.Seq2[string, error]) (int, error) {
	n := 0
	for _, err := range imagesIn(paths) {
		if err != nil {
			return 0, invalid(err)
		}
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		n++
	}
	return n, nil
}

// labeller holds one batch of PredictStream: the paths and decoded pixels
// of its images, within the byte bounds, and labels it.
type labeller struct {
	net      *model.Net
	in       model.Input
	opts     data.FolderOptions
	size     int // float32 values of one image at the input
	perImage int // bytes of float32 tensors of one image: input, features, logits
	bound    int // bytes of tensors in a batch
	maxN     int // images a batch can hold at most, by its tensors
	total    int // images in all, or -1 when not known
	names    int // bytes of file names (and their string headers) in the batch

	paths []string
	x     []float32 // the batch's pixels, [len(paths), C, H, W]; grown up to maxN images, then reused
}

// nameCost is what one file name costs a batch: its bytes and its string
// header.
func nameCost(path string) int { return len(path) + 16 }

// newLabeller returns an empty batch for net, reading images as in says,
// within bound bytes of tensors, for total images (-1: not known).
func newLabeller(net *model.Net, in model.Input, bound, total int) *labeller {
	a := net.Arch
	l := &labeller{net: net, in: in, bound: bound, total: total,
		opts: data.FolderOptions{C: a.C, H: a.H, W: a.W, Mean: in.Mean, Std: in.Std}}
	l.size = a.C * a.H * a.W
	per := l.size + a.Classes
	if f, ok := a.FrontEnd(); ok {
		per += f.OutSize
	}
	l.perImage = 4 * per
	l.maxN = max(1, bound/l.perImage)
	return l
}

// fits reports whether an image named path can join the batch: an empty
// batch takes any image.
func (l *labeller) fits(path string) bool {
	n := len(l.paths)
	return n == 0 || (n < l.maxN && l.names+nameCost(path) <= l.bound/8)
}

// add puts path in the batch and returns the place of its pixels.
func (l *labeller) add(path string) []float32 {
	n := len(l.paths)
	if need := (n + 1) * l.size; need > len(l.x) {
		// Room for every image when their number is known (and right),
		// else grown by doubling; never past maxN images: a short run
		// holds little, a long one reuses one buffer.
		room := min(2*len(l.x), l.maxN*l.size)
		if l.total > n {
			room = min(l.total, l.maxN) * l.size
		}
		x := make([]float32, max(need, room))
		copy(x, l.x[:n*l.size])
		l.x = x
	}
	l.paths = append(l.paths, path)
	l.names += nameCost(path)
	return l.x[n*l.size : (n+1)*l.size]
}

// drop takes the last image added out of the batch.
func (l *labeller) drop() {
	n := len(l.paths) - 1
	l.names -= nameCost(l.paths[n])
	l.paths[n] = ""
	l.paths = l.paths[:n]
}

// reset empties the batch, keeping its pixel buffer.
func (l *labeller) reset() {
	clear(l.paths)
	l.paths = l.paths[:0]
	l.names = 0
}

// logits runs the model on the batch and returns its logits,
// [len(l.paths), classes].
func (l *labeller) logits(ctx context.Context) ([]float32, error) {
	a := l.net.Arch
	n := len(l.paths)
	xs := l.x[:n*l.size]
	if front, ok := a.FrontEnd(); ok {
		feat, err := features.Compute(ctx, front, &data.Dataset{Name: "images", X: xs, Y: make([]uint8, n), N: n, C: a.C, H: a.H, W: a.W, Classes: a.Classes}, nil)
		if err != nil {
			return nil, err
		}
		xs = feat.X
	}
	return dpsgd.Logits(ctx, l.net, xs)
}

// prediction is the batch's image i's Prediction from the batch's
// logits: made one at a time, as it is emitted, so that a batch never
// holds its predictions.
func (l *labeller) prediction(i int, logits []float32) Prediction {
	k := l.net.Arch.Classes
	p, best := softmax(logits[i*k : (i+1)*k])
	label := strconv.Itoa(best)
	if len(l.in.Classes) == k {
		label = l.in.Classes[best]
	}
	return Prediction{Path: l.paths[i], Label: label, Index: best, Probabilities: p}
}

// inputOf is the model's recorded input, or for a model saved before it
// was recorded, its dataset's by input shape.
func inputOf(a model.Arch, meta model.Metadata) (model.Input, error) {
	if meta.Input != nil {
		o := data.FolderOptions{C: a.C, H: a.H, W: a.W, Mean: meta.Input.Mean, Std: meta.Input.Std}
		if len(o.Mean) == 0 && len(o.Std) == 0 {
			o.Mean, o.Std = nil, nil
		}
		if err := o.Check(); err != nil {
			return model.Input{}, fmt.Errorf("its input constants: %v", err)
		}
		return *meta.Input, nil
	}
	for _, name := range data.Names() {
		if k, _ := data.Lookup(name); k.C == a.C && k.H == a.H && k.W == a.W && k.Classes == a.Classes {
			return model.Input{Dataset: name, Classes: k.ClassNames, Mean: k.Mean, Std: k.Std}, nil
		}
	}
	return model.Input{}, fmt.Errorf("it records no input normalisation and reads %d×%d×%d images, no dataset's shape", a.C, a.H, a.W)
}

// imagesIn yields the image files paths names, in order: a file is
// itself, a directory its regular files not hidden with an image
// extension (any depth, in lexical order). It ends with an error for a
// path that cannot be stat'ed, a directory that cannot be walked or holds
// no image, or an error paths yields. It holds one path and the walk of
// one directory at a time.
func imagesIn(paths iter.Seq2[string, error]) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for p, err := range paths {
			if err != nil {
				yield("", err)
				return
			}
			st, err := os.Stat(p)
			if err != nil {
				yield("", err)
				return
			}
			if !st.IsDir() {
				if !yield(p, nil) {
					return
				}
				continue
			}
			found, stopped := false, false
			err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
					switch strings.ToLower(filepath.Ext(path)) {
					case ".png", ".jpg", ".jpeg", ".gif", ".tif", ".tiff":
						found = true
						if !yield(path, nil) {
							stopped = true
							return filepath.SkipAll
						}
					}
				}
				return nil
			})
			switch {
			case stopped:
				return
			case err == nil && !found:
				err = fmt.Errorf("%s: no .png, .jpg, .jpeg, .gif, .tif or .tiff file", p)
			}
			if err != nil {
				yield("", err)
				return
			}
		}
	}
}

// softmax returns the probabilities of logits (computed stably in float64)
// and the index of the largest.
func softmax(logits []float32) ([]float64, int) {
	best := 0
	for i, v := range logits {
		if v > logits[best] {
			best = i
		}
	}
	p := make([]float64, len(logits))
	var sum float64
	for i, v := range logits {
		p[i] = math.Exp(float64(v) - float64(logits[best]))
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p, best
}
