package data

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/color"
	_ "image/gif"  // GIF decoding for image.Decode (its first frame)
	_ "image/jpeg" // JPEG decoding for image.Decode
	_ "image/png"  // PNG decoding for image.Decode
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/image/draw"
	_ "golang.org/x/image/tiff" // TIFF decoding for image.Decode

	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/internal/textsafe"
)

// An image folder is torchvision's ImageFolder layout: DIR/train/<class>/…
// and DIR/test/<class>/…, one directory per class, named by the class.
//
// The public split decides; the private one is read as it comes. The test
// split is public (its accuracy is released without noise), so it alone
// names the classes: test/'s sub-directories, sorted by byte value (as
// torchvision sorts them); label i is the i-th. A missing train/ or test/
// directory, fewer than 2 or more than MaxFolderClasses classes, a class
// name that is not printable text (textsafe.Printable: no control or
// bidirectional characters, valid UTF-8), an empty test class, and a test
// file that cannot be read or decoded are refused — all before any
// training file is read. The input shape is the caller's (FolderOptions'
// C, H, W); InspectFolder gives the first test image's for a default.
//
// The training split is private, and no single training file decides
// whether a run happens: a training file that cannot be read or is not a
// regular file, that is not an image in a format FolderFormats lists, that
// has more than 4096 × 4096 pixels or 64 MiB, or (NoResize) whose size is
// not the network's; a training class directory with no directory of that
// name in test/ (and any other entry of train/ that is not a class
// directory); a directory reached again through symbolic links or nested
// deeper than 32; and every image past the split's bound
// (FolderOptions.MaxTrain) are left out and counted for the curator
// (FolderOptions.Warn), never refused. An empty or missing training class
// trains.
//
// As torchvision's ImageFolder (os.walk with followlinks=True), class
// directories and files that are symbolic links are followed, and images in
// sub-directories of a class belong to that class. Names starting with "."
// are passed over at every level. Files are ordered by class, then by the
// path of their directory, then by name (torchvision's order), whatever the
// decoding parallelism, so a folder always gives the same dataset. Images
// are read by their content, whatever their extension.

// FolderFormats are the image formats a folder's images are read in, as
// image.DecodeConfig names them: PNG, JPEG, GIF (its first frame) and
// TIFF. A file in another format (even one a decoder registered elsewhere
// in the program reads) is not an image here.
var FolderFormats = []string{"png", "jpeg", "gif", "tiff"}

// folderFormatsHelp is FolderFormats for an error message.
const folderFormatsHelp = "PNG, JPEG, GIF or TIFF"

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

// maxDecodePixels bounds the source pixels being decoded at once, over
// every decoding goroutine: two images of maxImagePixels (at most 8 bytes
// a pixel, 16-bit RGBA: 256 MiB), whatever the parallelism.
const maxDecodePixels = 2 * maxImagePixels

// maxImageBytes bounds one image file, read whole before it is decoded.
const maxImageBytes = 64 << 20

// maxFolderBytes bounds both splits' float32 tensors together
// (FolderMemoryLimit).
const maxFolderBytes = 16 << 30

// maxFolderDepth bounds how deep a class directory's sub-directories are
// read (the class directory is depth 0).
const maxFolderDepth = 32

// FolderMemoryLimit is the most bytes LoadFolder gives the float32
// tensors of both splits together: 16 GiB, or half the Go runtime's soft
// memory limit (runtime/debug.SetMemoryLimit; the dptune command sets it to
// three quarters of the machine's memory) if that is lower. Both are
// public facts about the machine, never about the images.
func FolderMemoryLimit() int64 {
	return min(maxFolderBytes, debug.SetMemoryLimit(-1)/2)
}

// FolderOptions say how LoadFolder turns images into a network's input.
type FolderOptions struct {
	// C, H, W are the network's input: C = 1 reads each image as grey
	// levels (ITU-R 601 luma, Go's color.GrayModel), C = 3 as RGB
	// (colours with alpha composited over black); H × W is the size.
	C, H, W int
	// NoResize leaves out a training image of another size (and refuses
	// a test image of another size); otherwise it is resized to H × W by
	// bilinear interpolation (golang.org/x/image/draw.BiLinear, which
	// averages over the source pixels each output pixel covers when
	// shrinking).
	NoResize bool
	// Mean and Std are public per-channel constants: pixel values are
	// v/255 (in [0, 1]) mapped to (v/255 − Mean[c]) / Std[c]. Nil: mean 0
	// and standard deviation 1. They are never computed from the images.
	Mean, Std []float64
	// NominalN is the public size of the training set (0: none declared).
	// It bounds the training images read (MaxTrain) and must fit the
	// memory bound (CheckMemory).
	NominalN int
	// Workers decode in parallel (0: GOMAXPROCS).
	Workers int
	// Progress, if not nil, is called as images are decoded (done of
	// total, per split), one call at a time.
	Progress func(split string, done, total int)
	// Warn, if not nil, is called once after the training split is read
	// when anything was left out of it, with one line: the counts by kind
	// and the first path of each. It is the curator's note (it describes
	// the private data): never put it in a release.
	Warn func(string)
}

// maxNormalised bounds the magnitude of a normalised pixel, (v/255 −
// mean) / std for v/255 in [0, 1]: constants that map pixels further make
// float32 training overflow (MNIST's constants give at most 2.8).
const maxNormalised = 1e3

// Check returns an error for options no folder can be read with: a channel
// count other than 1 or 3, a size outside 1 … 4096, a negative nominal
// size, or constants that are not one finite mean and positive finite
// deviation per channel, or that map a pixel in [0, 1] beyond ±1000
// (for instance a deviation of 1e-300, which overflows float32).
func (o FolderOptions) Check() error {
	switch {
	case o.C != 1 && o.C != 3:
		return fmt.Errorf("an image folder is read as 1 (grey) or 3 (RGB) channels, not %d", o.C)
	case o.H < 1 || o.W < 1 || o.H > 4096 || o.W > 4096:
		return fmt.Errorf("image size %d×%d is outside 1 … 4096", o.H, o.W)
	case o.NominalN < 0:
		return fmt.Errorf("nominal size %d is negative", o.NominalN)
	case o.Mean == nil && o.Std == nil:
		return nil
	case len(o.Mean) != o.C || len(o.Std) != o.C:
		return fmt.Errorf("need %d means and standard deviations (one per channel), have %d and %d", o.C, len(o.Mean), len(o.Std))
	}
	for c := range o.C {
		m, s := o.Mean[c], o.Std[c]
		if !(s > 0) || math.IsInf(s, 0) || math.IsNaN(m) || math.IsInf(m, 0) {
			return fmt.Errorf("channel %d: mean %g and standard deviation %g must be finite, the deviation positive", c, m, s)
		}
		if r := max(math.Abs(m), math.Abs(1-m)) / s; !(r <= maxNormalised) {
			return fmt.Errorf("channel %d: mean %g and standard deviation %g map pixels in [0, 1] to magnitudes up to %.3g; at most %g (float32 training would overflow)", c, m, s, r, float64(maxNormalised))
		}
	}
	return nil
}

// imageBytes is the bytes of one image's float32 tensor.
func (o FolderOptions) imageBytes() int64 { return int64(o.C) * int64(o.H) * int64(o.W) * 4 }

// MaxTrain is the most training images LoadFolder reads beside testN test
// images, a bound fixed by public facts only: 2 × NominalN (no count bound
// when NominalN is 0), and no more than fit FolderMemoryLimit beside the
// test split's tensor, nor 2²⁴. Images past it are left out and counted.
func (o FolderOptions) MaxTrain(testN int) int {
	b := o.imageBytes()
	if b < 1 {
		return 0
	}
	n := max(0, (FolderMemoryLimit()-int64(testN)*b)/b)
	n = min(n, maxFolderImages)
	if o.NominalN > 0 {
		n = min(n, 2*int64(o.NominalN))
	}
	return int(n)
}

// CheckMemory returns an error when testN test images and NominalN
// training images of o's shape do not fit FolderMemoryLimit as float32
// (or testN is above 2²⁴): public facts, so the run is refused rather
// than cut.
func (o FolderOptions) CheckMemory(testN int) error {
	b, limit := o.imageBytes(), FolderMemoryLimit()
	need := (int64(testN) + int64(o.NominalN)) * b
	if testN > maxFolderImages || need > limit {
		return fmt.Errorf("%d test and %d (nominal) training images of %d×%d×%d need %s as float32, more than the %s this process gives an image folder (16 GiB, or half its memory limit)",
			testN, o.NominalN, o.C, o.H, o.W, gib(need), gib(limit))
	}
	return nil
}

// pathErr is err about path on one line, path quoted when it is not
// printable (textsafe.Quoted) and named once.
func pathErr(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s: %w", textsafe.Quoted(path), err)
}

// gib formats a byte count in GiB.
func gib(n int64) string { return fmt.Sprintf("%.3g GiB", float64(n)/(1<<30)) }

// FolderInfo is what an image folder's public test split says
// (InspectFolder).
type FolderInfo struct {
	// Classes are test/'s class directories, sorted.
	Classes []string
	// TestN is the number of test images.
	TestN int
	// C, H, W are the first test image's (first class, first file):
	// C = 1 for a grey colour model (8 or 16 bits), else 3; its height
	// and width in pixels.
	C, H, W int
	// Format is the first test image's format (one of FolderFormats).
	Format string
}

// InspectFolder reads the public part of the image folder dir: the class
// directories and files of dir/test and the header of the first test
// image; of dir/train it only checks that it is a directory. It returns an
// error naming the path for a missing train or test directory, fewer than
// 2 or more than MaxFolderClasses classes, a class name that is not
// printable, an empty test class, a test entry that cannot be read, is not
// a regular file or closes a loop of symbolic links, or a first test image
// that is not in a format FolderFormats lists or has more than 4096 × 4096
// pixels.
func InspectFolder(dir string) (FolderInfo, error) {
	info, _, err := inspect(dir)
	return info, err
}

// FolderClasses returns the class names of the image folder dir (InspectFolder's
// Classes: test/'s sub-directories, sorted), or InspectFolder's error.
func FolderClasses(dir string) ([]string, error) {
	info, err := InspectFolder(dir)
	return info.Classes, err
}

// inspect is InspectFolder, with the test files it listed.
func inspect(dir string) (FolderInfo, []folderFile, error) {
	train := filepath.Join(dir, "train")
	if fi, err := os.Stat(train); err != nil {
		return FolderInfo{}, nil, pathErr(train, err)
	} else if !fi.IsDir() {
		return FolderInfo{}, nil, fmt.Errorf("%s: not a directory", textsafe.Quoted(train))
	}
	testDir := filepath.Join(dir, "test")
	classes, _, err := classDirs(testDir)
	if err != nil {
		return FolderInfo{}, nil, pathErr(testDir, err)
	}
	switch {
	case len(classes) < 2:
		return FolderInfo{}, nil, fmt.Errorf("%s: %d class directories, need at least 2", textsafe.Quoted(testDir), len(classes))
	case len(classes) > MaxFolderClasses:
		return FolderInfo{}, nil, fmt.Errorf("%s: %d class directories, at most %d", textsafe.Quoted(testDir), len(classes), MaxFolderClasses)
	}
	var files []folderFile
	for i, c := range classes {
		cdir := filepath.Join(testDir, c)
		if !textsafe.Printable(c) {
			return FolderInfo{}, nil, fmt.Errorf("%q: a class name must be printable text (valid UTF-8, no control or bidirectional characters)", cdir)
		}
		var bad error
		paths := walkClass(cdir, func(path string, _ skipReason, err error) {
			if bad == nil {
				bad = pathErr(path, err)
			}
		})
		if bad != nil {
			return FolderInfo{}, nil, bad
		}
		if len(paths) == 0 {
			return FolderInfo{}, nil, fmt.Errorf("%s: test class %s has no images", textsafe.Quoted(cdir), textsafe.Quoted(c))
		}
		if len(files)+len(paths) > maxFolderImages {
			return FolderInfo{}, nil, fmt.Errorf("%s: more than %d images", textsafe.Quoted(testDir), maxFolderImages)
		}
		for _, p := range paths {
			files = append(files, folderFile{p, uint8(i)})
		}
	}
	first := files[0].path
	b, err := fsx.ReadFile(first, maxImageBytes)
	if err != nil {
		return FolderInfo{}, nil, pathErr(first, err)
	}
	cfg, format, _, err := decodeConfig(b)
	if err != nil {
		return FolderInfo{}, nil, fmt.Errorf("%s: %v", textsafe.Quoted(first), err)
	}
	c := 3
	switch cfg.ColorModel {
	case color.GrayModel, color.Gray16Model:
		c = 1
	}
	return FolderInfo{Classes: classes, TestN: len(files), C: c, H: cfg.Height, W: cfg.Width, Format: format}, files, nil
}

// classDirs lists the entries of dir that are directories or symbolic
// links to directories, sorted, names starting with "." aside; other lists
// the other entries (files, broken links), hidden ones aside.
func classDirs(dir string) (classes, other []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			fi, err := os.Stat(filepath.Join(dir, name))
			isDir = err == nil && fi.IsDir()
		}
		if isDir {
			classes = append(classes, name)
		} else {
			other = append(other, name)
		}
	}
	slices.Sort(classes)
	return classes, other, nil
}

// skipReason is why a training file or directory was left out.
type skipReason int

const (
	skipUnreadable skipReason = iota
	skipNotImage
	skipTooLarge
	skipOtherSize
	skipLoop
	skipNoClass
	skipPastBound
	nSkipReasons
)

// skipWhat describes each skipReason for the curator's note.
var skipWhat = [nSkipReasons]string{
	skipUnreadable: "unreadable or not a regular file",
	skipNotImage:   "not a " + folderFormatsHelp + " image",
	skipTooLarge:   "larger than 4096×4096 pixels or 64 MiB",
	skipOtherSize:  "not the network's size (no resizing)",
	skipLoop:       "directories reached again through links or nested deeper than 32",
	skipNoClass:    "entries of train/ that are not a class of test/",
	skipPastBound:  "images past the bound of 2 × nominal size and memory",
}

// folderSkips counts what was left out of a training split, with the
// first path of each kind.
type folderSkips struct {
	n     [nSkipReasons]int
	first [nSkipReasons]string
}

func (s *folderSkips) add(r skipReason, path string) {
	if s.n[r] == 0 {
		s.first[r] = path
	}
	s.n[r]++
}

// total is the number of entries left out.
func (s *folderSkips) total() int {
	t := 0
	for _, n := range s.n {
		t += n
	}
	return t
}

// String is the counts by kind, each with its first path: "2 not a PNG,
// JPEG, GIF or TIFF image (first: a/x.txt); 1 …".
func (s *folderSkips) String() string {
	var parts []string
	for r, n := range s.n {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (first: %s)", n, skipWhat[r], textsafe.Quoted(s.first[r])))
		}
	}
	return strings.Join(parts, "; ")
}

// errLinkLoop and errTooDeep are a walk's reasons for not reading a
// directory.
var (
	errLinkLoop = errors.New("a directory reached again through a symbolic link")
	errTooDeep  = fmt.Errorf("nested deeper than %d directories", maxFolderDepth)
)

// walkClass lists the files under the class directory root, following
// symbolic links (each directory read once: a link back to a directory
// already read is not followed) to a depth of maxFolderDepth, names
// starting with "." aside. Files are ordered by their directory's path,
// then by name (os.walk sorted, as torchvision's ImageFolder orders them).
// An entry that cannot be read, is not a regular file or directory, or is
// a directory not read (a loop, too deep) is passed to bad and not listed.
func walkClass(root string, bad func(path string, r skipReason, err error)) []string {
	type dirFiles struct {
		dir   string
		files []string
	}
	var dirs []dirFiles
	seen := map[string]bool{}
	var visit func(dir string, depth int)
	visit = func(dir string, depth int) {
		real, err := filepath.EvalSymlinks(dir)
		switch {
		case err != nil:
			bad(dir, skipUnreadable, err)
			return
		case seen[real]:
			bad(dir, skipLoop, errLinkLoop)
			return
		case depth > maxFolderDepth:
			bad(dir, skipLoop, errTooDeep)
			return
		}
		seen[real] = true
		entries, err := os.ReadDir(dir) // sorted by name
		if err != nil {
			bad(dir, skipUnreadable, err)
			return
		}
		d := dirFiles{dir: dir}
		var subs []string
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := filepath.Join(dir, e.Name())
			mode := e.Type()
			if mode&fs.ModeSymlink != 0 {
				fi, err := os.Stat(p)
				if err != nil {
					bad(p, skipUnreadable, err)
					continue
				}
				mode = fi.Mode().Type()
			}
			switch {
			case mode.IsDir():
				subs = append(subs, p)
			case mode.IsRegular():
				d.files = append(d.files, p)
			default:
				bad(p, skipUnreadable, fmt.Errorf("%w (%s)", fsx.ErrNotRegular, fsx.Kind(mode)))
			}
		}
		dirs = append(dirs, d)
		for _, s := range subs {
			visit(s, depth+1)
		}
	}
	visit(root, 0)
	slices.SortFunc(dirs, func(a, b dirFiles) int { return strings.Compare(a.dir, b.dir) })
	var out []string
	for _, d := range dirs {
		out = append(out, d.files...)
	}
	return out
}

// folderFile is one image of a split and its label.
type folderFile struct {
	path  string
	label uint8
}

// trainFiles lists the training split's images of classes (label i for
// classes[i]), at most limit of them, counting in skips what is left out:
// entries of train/ that are not one of classes, what walkClass does not
// list, and the images past limit. A missing class directory is an empty
// class. The error is train/ itself not listable.
func trainFiles(dir string, classes []string, limit int, skips *folderSkips) ([]folderFile, error) {
	trainDir := filepath.Join(dir, "train")
	present, other, err := classDirs(trainDir)
	if err != nil {
		return nil, pathErr(trainDir, err)
	}
	for _, name := range other {
		skips.add(skipNoClass, filepath.Join(trainDir, name))
	}
	for _, name := range present {
		if !slices.Contains(classes, name) {
			skips.add(skipNoClass, filepath.Join(trainDir, name))
		}
	}
	var out []folderFile
	for i, c := range classes {
		if !slices.Contains(present, c) {
			continue
		}
		paths := walkClass(filepath.Join(trainDir, c), func(path string, r skipReason, _ error) { skips.add(r, path) })
		for _, p := range paths {
			if len(out) >= limit {
				skips.add(skipPastBound, p)
				continue
			}
			out = append(out, folderFile{p, uint8(i)})
		}
	}
	return out, nil
}

// LoadFolder reads the image folder dir as o says: the training and test
// sets, shape [N, o.C, o.H, o.W], and the class names (see the package's
// notes on image folders: the test split decides, training files that
// cannot be used are left out and counted through o.Warn). The test split
// is checked and decoded first, so its refusals come before any training
// file is read. Decoding runs on o.Workers goroutines, with at most
// 2 × 4096 × 4096 source pixels in flight, and stops soon after ctx is
// cancelled. Errors: o's (Check, CheckMemory), InspectFolder's, a test
// image that cannot be read or decoded (or of another size under
// NoResize), naming its file, train/ not listable, or ctx's.
func LoadFolder(ctx context.Context, dir string, o FolderOptions) (train, test *Dataset, classes []string, err error) {
	train, test, classes, skips, err := loadFolder(ctx, dir, o)
	if err == nil && skips.total() > 0 && o.Warn != nil {
		entries := "entries"
		if skips.total() == 1 {
			entries = "entry"
		}
		o.Warn(fmt.Sprintf("%s: left out %d %s of the training split, counted here only (curator-side note; the private count is never released): %v",
			textsafe.Quoted(filepath.Join(dir, "train")), skips.total(), entries, &skips))
	}
	return train, test, classes, err
}

// loadFolder is LoadFolder, returning what it left out of the training
// split instead of warning.
func loadFolder(ctx context.Context, dir string, o FolderOptions) (train, test *Dataset, classes []string, skips folderSkips, err error) {
	if err = o.Check(); err != nil {
		return
	}
	info, testList, err := inspect(dir)
	if err != nil {
		return
	}
	if err = o.CheckMemory(info.TestN); err != nil {
		return
	}
	name := filepath.Base(dir)
	if test, err = decodeFolder(ctx, testList, o, name+"/test", "test", len(info.Classes), nil); err != nil {
		return
	}
	trainList, err := trainFiles(dir, info.Classes, o.MaxTrain(info.TestN), &skips)
	if err != nil {
		return nil, nil, nil, skips, err
	}
	if train, err = decodeFolder(ctx, trainList, o, name+"/train", "train", len(info.Classes), &skips); err != nil {
		return nil, nil, nil, skips, err
	}
	return train, test, info.Classes, skips, nil
}

// pixelGate bounds the source pixels being decoded at once.
type pixelGate struct {
	mu   sync.Mutex
	cond sync.Cond
	free int
}

func newPixelGate(n int) *pixelGate {
	g := &pixelGate{free: n}
	g.cond.L = &g.mu
	return g
}

// acquire waits until n pixels are free and takes them (n ≤ the gate's
// size, which maxImagePixels ≤ maxDecodePixels ensures).
func (g *pixelGate) acquire(n int) {
	g.mu.Lock()
	for g.free < n {
		g.cond.Wait()
	}
	g.free -= n
	g.mu.Unlock()
}

func (g *pixelGate) release(n int) {
	g.mu.Lock()
	g.free += n
	g.mu.Unlock()
	g.cond.Broadcast()
}

// decodeFolder decodes files into one dataset. With skips nil (the test
// split) the first file that cannot be decoded is the error; otherwise
// such files are left out of the dataset and counted in skips, and the
// dataset keeps the others in order.
func decodeFolder(ctx context.Context, files []folderFile, o FolderOptions, name, split string, classes int, skips *folderSkips) (*Dataset, error) {
	size := o.C * o.H * o.W
	d := &Dataset{Name: name, N: len(files), C: o.C, H: o.H, W: o.W, Classes: classes, X: make([]float32, len(files)*size), Y: make([]uint8, len(files))}
	workers := o.Workers
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(files)))
	reasons := make([]skipReason, len(files))
	failed := make([]bool, len(files))
	gate := newPixelGate(maxDecodePixels)
	var next, done atomic.Int64
	var mu sync.Mutex
	var firstErr error
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
				if r, err := decodeInto(f.path, o, d.X[i*size:(i+1)*size], gate); err != nil {
					if skips == nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
						return
					}
					failed[i], reasons[i] = true, r
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
	// Close the gaps of the files left out, keeping the order.
	n := 0
	for i := range files {
		if failed[i] {
			skips.add(reasons[i], files[i].path)
			continue
		}
		if n != i {
			copy(d.X[n*size:(n+1)*size], d.X[i*size:(i+1)*size])
			d.Y[n] = d.Y[i]
		}
		n++
	}
	d.N, d.X, d.Y = n, d.X[:n*size:n*size], d.Y[:n:n]
	return d, nil
}

// decodeConfig reads the format and header of the image in b, refusing a
// format FolderFormats does not list and more than maxImagePixels pixels.
func decodeConfig(b []byte) (image.Config, string, skipReason, error) {
	cfg, format, err := image.DecodeConfig(bytes.NewReader(b))
	switch {
	case err != nil:
		return cfg, format, skipNotImage, fmt.Errorf("not a %s image: %w", folderFormatsHelp, err)
	case !slices.Contains(FolderFormats, format):
		return cfg, format, skipNotImage, fmt.Errorf("a %s image, not %s", format, folderFormatsHelp)
	case cfg.Width < 1 || cfg.Height < 1 || int64(cfg.Width)*int64(cfg.Height) > maxImagePixels:
		return cfg, format, skipTooLarge, fmt.Errorf("%d×%d pixels: too large to read (at most %d)", cfg.Width, cfg.Height, maxImagePixels)
	}
	return cfg, format, 0, nil
}

// decodeInto decodes the image at path into dst ([C, H, W]) as o says,
// holding its pixels from gate while it decodes (gate nil: no bound). The
// error names path; its reason says which kind of skip it is.
func decodeInto(path string, o FolderOptions, dst []float32, gate *pixelGate) (skipReason, error) {
	b, err := fsx.ReadFile(path, maxImageBytes)
	if err != nil {
		if errors.Is(err, fsx.ErrTooLarge) {
			return skipTooLarge, pathErr(path, err)
		}
		return skipUnreadable, pathErr(path, err)
	}
	cfg, _, r, err := decodeConfig(b)
	if err != nil {
		return r, fmt.Errorf("%s: %w", textsafe.Quoted(path), err)
	}
	if o.NoResize && (cfg.Width != o.W || cfg.Height != o.H) {
		return skipOtherSize, fmt.Errorf("%s: %d×%d, not the network's %d×%d (no resizing)", textsafe.Quoted(path), cfg.Width, cfg.Height, o.W, o.H)
	}
	if gate != nil {
		px := cfg.Width * cfg.Height
		gate.acquire(px)
		defer gate.release(px)
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return skipNotImage, fmt.Errorf("%s: %w", textsafe.Quoted(path), err)
	}
	// Composite over black in RGBA, at the network's size.
	rgba := image.NewRGBA(image.Rect(0, 0, o.W, o.H))
	src := img.Bounds()
	if src.Dx() == o.W && src.Dy() == o.H {
		draw.Draw(rgba, rgba.Bounds(), img, src.Min, draw.Src)
	} else {
		draw.BiLinear.Scale(rgba, rgba.Bounds(), img, src, draw.Src, nil)
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
	return 0, nil
}

// scale maps an 8-bit value of channel c to (v/255 − mean) / std.
func (o FolderOptions) scale(c int, v uint8) float32 {
	x := float64(v) / 255
	if o.Mean != nil {
		x = (x - o.Mean[c]) / o.Std[c]
	}
	return float32(x)
}

// DecodeImage decodes the image at path (in a format FolderFormats lists,
// by content) into dst, which must hold o.C × o.H × o.W values, as
// LoadFolder reads a folder's images (its channels, resizing or NoResize
// refusal, and normalisation). Errors name path: o's, an unreadable file
// or one that is not a regular file, a file of more than 64 MiB, an image
// not in FolderFormats or of more than 4096 × 4096 pixels, another size
// under NoResize.
func DecodeImage(path string, o FolderOptions, dst []float32) error {
	if err := o.Check(); err != nil {
		return err
	}
	if len(dst) != o.C*o.H*o.W {
		return fmt.Errorf("%s: %d values for a %d×%d×%d image", textsafe.Quoted(path), len(dst), o.C, o.H, o.W)
	}
	_, err := decodeInto(path, o, dst, nil)
	return err
}
