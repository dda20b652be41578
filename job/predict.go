package job

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
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

// maxPredictImages bounds the images one Predict call reads.
const maxPredictImages = 1 << 20

// predictBatchBytes bounds the float32 tensors one batch of Predict holds
// (the decoded images, their front end's features and their logits): the
// images are decoded and evaluated this many bytes at a time (at least one
// image), so that memory does not grow with the number of images. The
// garbage of decoding (each image's own buffers) lets the heap reach about
// twice this before it is collected.
var predictBatchBytes = 64 << 20

// Predict labels images with the model saved in dir (by dptune train or
// tune) and returns their predictions in the order of paths: PredictEach,
// collected.
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

// PredictEach labels images with the model saved in dir (by dptune train
// or tune) and calls emit with each image's Prediction, in input order:
// each path is an image file in a format an image folder is read in
// (data.FolderFormats: PNG, JPEG, GIF, TIFF), or a directory whose .png,
// .jpg, .jpeg, .gif, .tif and .tiff files (case-insensitive, any depth, in
// lexical order) are read.
// Each image is read as the model's training data was (its channels,
// resized bilinearly to its input size, normalised with its recorded
// constants: model.Input; a model saved without them is read with its
// dataset's — MNIST's for 1×28×28 inputs, CIFAR-10's for 3×32×32), and the
// model's own forward pass (with its ScatterNet front end, if any) gives
// the probabilities. The images are decoded and evaluated in batches whose
// float32 tensors stay under a fixed bound (64 MiB, or one image): memory
// does not grow with their number, and the predictions of a batch are
// emitted before the next is read. progress, if not nil, is called as
// images are read. It returns an error wrapping ErrInvalid and naming the
// path for a model that does not load or whose parameters are not finite,
// a path that does not exist or holds no image (before any is read), or
// an image that does not decode (after the batches before it were
// emitted); emit's error ends it and is returned.
func PredictEach(ctx context.Context, dir string, paths []string, progress func(done, total int), emit func(Prediction) error) error {
	net, meta, err := model.Load(dir)
	if err != nil {
		return invalid(err)
	}
	if err := net.CheckFinite(); err != nil {
		return invalidf("the model in %s: %v", dir, err)
	}
	in, err := inputOf(net.Arch, meta)
	if err != nil {
		return invalidf("the model in %s: %v", dir, err)
	}
	files, err := imageFiles(paths)
	if err != nil {
		return invalid(err)
	}
	a := net.Arch
	o := data.FolderOptions{C: a.C, H: a.H, W: a.W, Mean: in.Mean, Std: in.Std}
	size := a.C * a.H * a.W
	front, hasFront := a.FrontEnd()
	k := a.Classes
	per := int64(size + k)
	if hasFront {
		per += int64(front.OutSize)
	}
	batch := int(max(1, min(int64(len(files)), int64(predictBatchBytes)/(4*per))))
	x := make([]float32, batch*size) // reused by every batch
	for lo := 0; lo < len(files); lo += batch {
		hi := min(lo+batch, len(files))
		n := hi - lo
		for i, f := range files[lo:hi] {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := data.DecodeImage(f, o, x[i*size:(i+1)*size]); err != nil {
				return invalid(err)
			}
			if progress != nil {
				progress(lo+i+1, len(files))
			}
		}
		xs := x[:n*size]
		if hasFront {
			feat, err := features.Compute(ctx, front, &data.Dataset{Name: "images", X: xs, Y: make([]uint8, n), N: n, C: a.C, H: a.H, W: a.W, Classes: a.Classes}, nil)
			if err != nil {
				return err
			}
			xs = feat.X
		}
		logits, err := dpsgd.Logits(ctx, net, xs)
		if err != nil {
			return err
		}
		for i, f := range files[lo:hi] {
			p, best := softmax(logits[i*k : (i+1)*k])
			label := strconv.Itoa(best)
			if len(in.Classes) == k {
				label = in.Classes[best]
			}
			if err := emit(Prediction{Path: f, Label: label, Index: best, Probabilities: p}); err != nil {
				return err
			}
		}
	}
	return nil
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

// imageFiles expands paths: a file is itself, a directory its image files.
func imageFiles(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			out = append(out, p)
			continue
		}
		n := len(out)
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
				switch strings.ToLower(filepath.Ext(path)) {
				case ".png", ".jpg", ".jpeg", ".gif", ".tif", ".tiff":
					out = append(out, path)
				}
			}
			if len(out) > maxPredictImages {
				return fmt.Errorf("more than %d images", maxPredictImages)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if len(out) == n {
			return nil, fmt.Errorf("%s: no .png, .jpg, .jpeg, .gif, .tif or .tiff file", p)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no image given")
	}
	return out, nil
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
