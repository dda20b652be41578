package data

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	_ "image/jpeg" // JPEG decoding for image.Decode
	_ "image/png"  // PNG decoding for image.Decode
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/image/draw"

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/internal/textsafe"
)

// An image folder is torchvision's ImageFolder layout: DIR/train/<class>/*
// and DIR/test/<class>/*, one directory per class, named by the class.
// The classes are the training directories' names sorted by byte value
// (Go's sort.Strings, as torchvision sorts them); label i is the i-th. The
// test directory must hold the same classes. Files are read in the order
// class, then file name, whatever the parallelism, so a folder always
// gives the same dataset. PNG and JPEG files are read (by their content,
// whatever their extension); a file of any other kind, a hidden file
// (a name starting with ".") aside, is an error naming it.

// MaxFolderClasses is the most classes a folder may hold: labels are
// bytes.
const MaxFolderClasses = 256

// maxFolderImages bounds the images of one split (a float32 tensor of
// 2²⁴ images of 3×32×32 is 200 GB: far beyond any machine this runs on).
const maxFolderImages = 1 << 24

// maxImagePixels bounds one decoded image (its header's size is checked
// before the pixels are read, from the same bytes): 4096 × 4096; a
// progressive JPEG of that size needs about 200 MB to decode.
const maxImagePixels = 1 << 24

// maxImageBytes bounds one image file, read whole before it is decoded.
const maxImageBytes = 64 << 20

// maxFolderBytes bounds a split's float32 tensor (N × C × H × W × 4 bytes),
// checked before it is allocated.
const maxFolderBytes = 16 << 30

// FolderOptions say how LoadFolder turns images into a network's input.
type FolderOptions struct {
	// C, H, W are the network's input: C = 1 reads each image as grey
	// levels (ITU-R 601 luma, Go's color.GrayModel), C = 3 as RGB
	// (colours with alpha composited over black); H × W is the size.
	C, H, W int
	// NoResize refuses an image of another size; otherwise it is resized
	// to H × W by bilinear interpolation (golang.org/x/image/draw.BiLinear,
	// which averages over the source pixels each output pixel covers when
	// shrinking).
	NoResize bool
	// Mean and Std are public per-channel constants: pixel values are
	// v/255 (in [0, 1]) mapped to (v/255 − Mean[c]) / Std[c]. Nil: mean 0
	// and standard deviation 1. They are never computed from the images.
	Mean, Std []float64
	// Workers decode in parallel (0: GOMAXPROCS).
	Workers int
	// Progress, if not nil, is called as images are decoded (done of
	// total, per split), one call at a time.
	Progress func(split string, done, total int)
}

// Check returns an error for options no folder can be read with: a channel
// count other than 1 or 3, a size outside 1 … 4096, or constants that are
// not one finite mean and positive finite deviation per channel.
func (o FolderOptions) Check() error {
	switch {
	case o.C != 1 && o.C != 3:
		return fmt.Errorf("an image folder is read as 1 (grey) or 3 (RGB) channels, not %d", o.C)
	case o.H < 1 || o.W < 1 || o.H > 4096 || o.W > 4096:
		return fmt.Errorf("image size %d×%d is outside 1 … 4096", o.H, o.W)
	case o.Mean == nil && o.Std == nil:
		return nil
	case len(o.Mean) != o.C || len(o.Std) != o.C:
		return fmt.Errorf("need %d means and standard deviations (one per channel), have %d and %d", o.C, len(o.Mean), len(o.Std))
	}
	for c := range o.C {
		if !(o.Std[c] > 0) || o.Std[c] > 1e30 || o.Mean[c] != o.Mean[c] || o.Mean[c] > 1e30 || o.Mean[c] < -1e30 {
			return fmt.Errorf("channel %d: mean %v and standard deviation %v must be finite, the deviation positive", c, o.Mean[c], o.Std[c])
		}
	}
	return nil
}

// FolderClasses returns the class names of the image folder dir (its
// train directory's subdirectories, sorted), or an error when dir/train or
// dir/test is missing, a class is missing from test or test has a class
// train does not, or there are fewer than 2 or more than MaxFolderClasses
// classes.
func FolderClasses(dir string) ([]string, error) {
	train, err := classDirs(filepath.Join(dir, "train"))
	if err != nil {
		return nil, err
	}
	test, err := classDirs(filepath.Join(dir, "test"))
	if err != nil {
		return nil, err
	}
	for _, c := range train {
		if !slices.Contains(test, c) {
			return nil, fmt.Errorf("%s: class %q has no directory in %s", filepath.Join(dir, "train", c), c, filepath.Join(dir, "test"))
		}
	}
	for _, c := range test {
		if !slices.Contains(train, c) {
			return nil, fmt.Errorf("%s: class %q is not a training class", filepath.Join(dir, "test", c), c)
		}
	}
	switch {
	case len(train) < 2:
		return nil, fmt.Errorf("%s: %d class directories, need at least 2", filepath.Join(dir, "train"), len(train))
	case len(train) > MaxFolderClasses:
		return nil, fmt.Errorf("%s: %d class directories, at most %d", filepath.Join(dir, "train"), len(train), MaxFolderClasses)
	}
	return train, nil
}

// classDirs lists the subdirectories of dir, sorted, hidden ones aside.
func classDirs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

// folderFile is one image of a split and its label.
type folderFile struct {
	path  string
	label uint8
}

// folderFiles lists split's images, class by class, each class's files
// sorted by name; an empty class is an error naming its directory.
func folderFiles(dir, split string, classes []string) ([]folderFile, error) {
	var out []folderFile
	for i, c := range classes {
		if !textsafe.Printable(c) {
			return nil, fmt.Errorf("%q: a class name must be printable text (no control characters, valid UTF-8)", filepath.Join(dir, split, c))
		}
		cdir := filepath.Join(dir, split, c)
		entries, err := os.ReadDir(cdir)
		if err != nil {
			return nil, err
		}
		n := 0
		for _, e := range entries { // os.ReadDir sorts by file name
			if strings.HasPrefix(e.Name(), ".") || e.IsDir() {
				continue
			}
			if !e.Type().IsRegular() {
				return nil, fmt.Errorf("%s: not a regular file", filepath.Join(cdir, e.Name()))
			}
			out = append(out, folderFile{filepath.Join(cdir, e.Name()), uint8(i)})
			n++
			if len(out) > maxFolderImages {
				return nil, fmt.Errorf("%s: more than %d images", filepath.Join(dir, split), maxFolderImages)
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("%s: class %q has no images", cdir, c)
		}
	}
	return out, nil
}

// LoadFolder reads the image folder dir (see FolderClasses) as o says:
// the training and test sets, shape [N, o.C, o.H, o.W], and the class
// names. Decoding runs on o.Workers goroutines and stops soon after ctx is
// cancelled. The error for an unreadable image, an image that is not PNG
// or JPEG, an image of another size under NoResize, or one too large to
// decode names its file.
func LoadFolder(ctx context.Context, dir string, o FolderOptions) (train, test *Dataset, classes []string, err error) {
	if err := o.Check(); err != nil {
		return nil, nil, nil, err
	}
	if classes, err = FolderClasses(dir); err != nil {
		return nil, nil, nil, err
	}
	sets := make([]*Dataset, 2)
	for k, split := range []string{"train", "test"} {
		files, err := folderFiles(dir, split, classes)
		if err != nil {
			return nil, nil, nil, err
		}
		if sets[k], err = decodeFolder(ctx, files, o, filepath.Base(dir)+"/"+split, split, len(classes)); err != nil {
			return nil, nil, nil, err
		}
	}
	return sets[0], sets[1], classes, nil
}

// decodeFolder decodes files into one dataset.
func decodeFolder(ctx context.Context, files []folderFile, o FolderOptions, name, split string, classes int) (*Dataset, error) {
	size := o.C * o.H * o.W
	if int64(len(files))*int64(size)*4 > maxFolderBytes {
		return nil, fmt.Errorf("%s: %d images of %d×%d×%d are more than %d GiB as float32", name, len(files), o.C, o.H, o.W, maxFolderBytes>>30)
	}
	d := &Dataset{Name: name, N: len(files), C: o.C, H: o.H, W: o.W, Classes: classes, X: make([]float32, len(files)*size), Y: make([]uint8, len(files))}
	workers := o.Workers
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	var next, done atomic.Int64
	var mu sync.Mutex
	var firstErr error
	fail := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) || ctx.Err() != nil {
					return
				}
				mu.Lock()
				stop := firstErr != nil
				mu.Unlock()
				if stop {
					return
				}
				f := files[i]
				if err := decodeInto(f.path, o, d.X[i*size:(i+1)*size]); err != nil {
					fail(err)
					return
				}
				d.Y[i] = f.label
				if n := done.Add(1); o.Progress != nil {
					mu.Lock()
					o.Progress(split, int(n), len(files))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return d, nil
}

// decodeInto decodes the image at path into dst ([C, H, W]) as o says.
func decodeInto(path string, o FolderOptions, dst []float32) error {
	b, err := fsx.ReadFile(path, maxImageBytes)
	if err != nil {
		return err
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: not a PNG or JPEG image: %w", path, err)
	}
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width*cfg.Height > maxImagePixels {
		return fmt.Errorf("%s: %d×%d pixels: too large to read (at most %d)", path, cfg.Width, cfg.Height, maxImagePixels)
	}
	if o.NoResize && (cfg.Width != o.W || cfg.Height != o.H) {
		return fmt.Errorf("%s: %d×%d, not the network's %d×%d (--no-resize)", path, cfg.Width, cfg.Height, o.W, o.H)
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// Composite over black in RGBA, at the network's size.
	rgba := image.NewRGBA(image.Rect(0, 0, o.W, o.H))
	r := img.Bounds()
	if r.Dx() == o.W && r.Dy() == o.H {
		draw.Draw(rgba, rgba.Bounds(), img, r.Min, draw.Src)
	} else {
		draw.BiLinear.Scale(rgba, rgba.Bounds(), img, r, draw.Src, nil)
	}
	plane := o.H * o.W
	for y := range o.H {
		for x := range o.W {
			p := rgba.RGBAAt(x, y)
			if o.C == 1 {
				g := color.GrayModel.Convert(p).(color.Gray)
				dst[y*o.W+x] = o.scale(0, g.Y)
			} else {
				dst[y*o.W+x] = o.scale(0, p.R)
				dst[plane+y*o.W+x] = o.scale(1, p.G)
				dst[2*plane+y*o.W+x] = o.scale(2, p.B)
			}
		}
	}
	return nil
}

// scale maps an 8-bit value of channel c to (v/255 − mean) / std.
func (o FolderOptions) scale(c int, v uint8) float32 {
	x := float64(v) / 255
	if o.Mean != nil {
		x = (x - o.Mean[c]) / o.Std[c]
	}
	return float32(x)
}

// FolderShape returns the channels (1 for a grey image, 3 for any other
// colour model) and size of the first training image of dir, for choosing
// a default network.
func FolderShape(dir string) (c, h, w int, err error) {
	classes, err := FolderClasses(dir)
	if err != nil {
		return 0, 0, 0, err
	}
	files, err := folderFiles(dir, "train", classes[:1])
	if err != nil {
		return 0, 0, 0, err
	}
	f, err := os.Open(files[0].path)
	if err != nil {
		return 0, 0, 0, err
	}
	defer f.Close()
	cfg, _, err := image.DecodeConfig(f)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%s: not a PNG or JPEG image: %w", files[0].path, err)
	}
	c = 3
	switch cfg.ColorModel {
	case color.GrayModel, color.Gray16Model:
		c = 1
	}
	return c, cfg.Height, cfg.Width, nil
}

// DecodeImage decodes the PNG or JPEG image at path into dst, which must
// hold o.C × o.H × o.W values, as LoadFolder reads a folder's images (its
// channels, resizing or NoResize refusal, and normalisation).
func DecodeImage(path string, o FolderOptions, dst []float32) error {
	if err := o.Check(); err != nil {
		return err
	}
	if len(dst) != o.C*o.H*o.W {
		return fmt.Errorf("%s: %d values for a %d×%d×%d image", path, len(dst), o.C, o.H, o.W)
	}
	return decodeInto(path, o, dst)
}
