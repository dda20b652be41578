package job

import (
	"context"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/model/features"
)

// Prediction is a saved model's label for one image: the class's name
// (the dataset's or the image folder's; its index when the model has no
// names), its index and the softmax probability of every class.
type Prediction struct {
	Path          string    `json:"path"`
	Label         string    `json:"label"`
	Index         int       `json:"index"`
	Probabilities []float64 `json:"probabilities"`
}

// maxPredictImages bounds the images one Predict call reads.
const maxPredictImages = 1 << 20

// Predict labels images with the model saved in dir (by dptune train or
// tune): each path is a PNG or JPEG file, or a directory whose .png, .jpg
// and .jpeg files (case-insensitive, any depth, in lexical order) are
// read. Each image is read as the model's training data was (its channels,
// resized bilinearly to its input size, normalised with its recorded
// constants: model.Input; a model saved without them is read with its
// dataset's — MNIST's for 1×28×28 inputs, CIFAR-10's for 3×32×32), and the
// model's own forward pass (with its ScatterNet front end, if any) gives
// the probabilities. progress, if not nil, is called as images are read.
// It returns an error wrapping ErrInvalid and naming the path for a model that does not load or
// whose parameters are not finite, a path that does not exist or holds no
// image, or an image that does not decode.
func Predict(ctx context.Context, dir string, paths []string, progress func(done, total int)) ([]Prediction, error) {
	net, meta, err := model.Load(dir)
	if err != nil {
		return nil, invalid(err)
	}
	if err := net.CheckFinite(); err != nil {
		return nil, invalidf("the model in %s: %v", dir, err)
	}
	in, err := inputOf(net.Arch, meta)
	if err != nil {
		return nil, invalidf("the model in %s: %v", dir, err)
	}
	files, err := imageFiles(paths)
	if err != nil {
		return nil, invalid(err)
	}
	a := net.Arch
	o := data.FolderOptions{C: a.C, H: a.H, W: a.W, Mean: in.Mean, Std: in.Std}
	size := a.C * a.H * a.W
	x := make([]float32, len(files)*size)
	for i, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := data.DecodeImage(f, o, x[i*size:(i+1)*size]); err != nil {
			return nil, invalid(err)
		}
		if progress != nil {
			progress(i+1, len(files))
		}
	}
	if f, ok := a.FrontEnd(); ok {
		feat, err := features.Compute(ctx, f, &data.Dataset{Name: "images", X: x, Y: make([]uint8, len(files)), N: len(files), C: a.C, H: a.H, W: a.W, Classes: a.Classes}, nil)
		if err != nil {
			return nil, err
		}
		x = feat.X
	}
	logits, err := dpsgd.Logits(ctx, net, x)
	if err != nil {
		return nil, err
	}
	out := make([]Prediction, len(files))
	k := a.Classes
	for i, f := range files {
		p, best := softmax(logits[i*k : (i+1)*k])
		label := strconv.Itoa(best)
		if len(in.Classes) == k {
			label = in.Classes[best]
		}
		out[i] = Prediction{Path: f, Label: label, Index: best, Probabilities: p}
	}
	return out, nil
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
				case ".png", ".jpg", ".jpeg":
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
			return nil, fmt.Errorf("%s: no .png, .jpg or .jpeg file", p)
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
