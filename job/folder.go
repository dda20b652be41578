package job

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/textsafe"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/runner"
)

// FolderName is the dataset name of an image folder (`--dataset folder`).
const FolderName = "folder"

// FolderSettings are how an image folder becomes a network's input
// (data.FolderOptions): public per-channel Mean and Std of the pixels
// scaled to [0, 1] (nil: 0 and 1), NoResize to leave out training images
// of another size (and refuse test images of another size) instead of
// resizing them, Shape to fix the input [C, H, W] (nil: by the network or
// the test split, FolderDataset), and Progress for the decoding.
type FolderSettings struct {
	Mean     []float64                           `json:"mean,omitempty"`
	Std      []float64                           `json:"std,omitempty"`
	NoResize bool                                `json:"no_resize,omitempty"`
	Shape    []int                               `json:"shape,omitempty"`
	Progress func(split string, done, total int) `json:"-"`
}

// FolderDataset returns the Source of the image folder dir
// (torchvision's ImageFolder layout: dir/train/<class>/…, dir/test/<class>/…;
// data.LoadFolder), training network (a built-in name or a .json spec).
//
// Only public facts decide the run: the classes are the test split's class
// directories (data.InspectFolder), and the input shape [C, H, W] is
// s.Shape when given, else that of the dataset a built-in network was made
// for (its name ends in "-mnist" or "-cifar10"), else the first test
// image's (1 channel for a grey image, 3 for any other; its height and
// width). No training image is read before the run's budget is reserved.
// network "" chooses by that shape: 1×28×28 trains tb-mnist, 3×32×32
// tb-cifar10, any other shape needs a network. Training images are
// converted to the shape (grey ↔ RGB, resized unless s.NoResize); what
// cannot be used is left out and counted in the job's curator-side
// warnings (data.LoadFolder), never refused.
//
// The dataset is named "folder:<the directory's last element>" in reports,
// exports and budget files (FolderDatasetName). nominalN is the public size
// of the training set, required: the folder's count is never used; it also
// bounds the training images read (2 × nominalN, data.FolderOptions.MaxTrain).
// The classes are returned too. Errors wrap ErrInvalid: no such folder, a
// directory name that is not printable text, InspectFolder's (a missing
// test split, an empty test class, a class name with control or
// bidirectional characters, a first test image not in data.FolderFormats),
// a bad s.Shape, a shape without a default network, a network that does
// not fit, a missing nominal size, constants data.FolderOptions.Check
// refuses, or a nominal size whose images do not fit in memory
// (data.FolderOptions.CheckMemory).
func FolderDataset(dir, network string, nominalN int, s FolderSettings) (Source, []string, error) {
	var spec *model.Spec
	if network != "" {
		sp, err := model.LoadSpec(network)
		if err != nil {
			return Source{}, nil, invalid(err)
		}
		spec = &sp
	}
	return folderDataset(dir, spec, nominalN, s)
}

// FolderFormatsHelp lists the formats an image folder's images are read
// in (data.FolderFormats), for a help text: "PNG, JPEG, GIF or TIFF".
func FolderFormatsHelp() string {
	f := make([]string, len(data.FolderFormats))
	for i, name := range data.FolderFormats {
		f[i] = strings.ToUpper(name)
	}
	return strings.Join(f[:len(f)-1], ", ") + " or " + f[len(f)-1]
}

// FolderDatasetName is the dataset name FolderDataset gives the image
// folder dir ("folder:<its last element>", e.g. "folder:photos"), or an
// error wrapping ErrInvalid when that element is not a name
// (CheckFolderDatasetName).
func FolderDatasetName(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", invalid(err)
	}
	name := FolderName + ":" + filepath.Base(abs)
	if err := CheckFolderDatasetName(name); err != nil {
		return "", err
	}
	return name, nil
}

// IsFolderDatasetName reports whether name is an image folder's dataset
// name ("folder:…"), valid or not.
func IsFolderDatasetName(name string) bool { return strings.HasPrefix(name, FolderName+":") }

// CheckFolderDatasetName returns an error wrapping ErrInvalid unless name
// is "folder:NAME" with NAME a directory's name that may be printed and
// released: printable text (textsafe.Printable: valid UTF-8, no control or
// bidirectional characters), not empty, ".", ".." or holding a path
// separator.
func CheckFolderDatasetName(name string) error {
	base, ok := strings.CutPrefix(name, FolderName+":")
	switch {
	case !ok:
		return invalidf("dataset %q is not an image folder's (folder:NAME)", name)
	case !textsafe.Printable(base):
		return invalidf("image folder %q: its directory's name must be printable text (valid UTF-8, no control or bidirectional characters): it names the dataset in reports and exports; rename the directory", base)
	case base == "" || base == "." || base == ".." || strings.ContainsAny(base, `/\`):
		return invalidf("image folder %q: not a directory name (folder:NAME, NAME the data directory's last element)", base)
	}
	return nil
}

// folderDataset is FolderDataset with the network as a spec (nil: by the
// input shape).
func folderDataset(dir string, spec *model.Spec, nominalN int, s FolderSettings) (Source, []string, error) {
	if dir == "" {
		return Source{}, nil, invalidf("--dataset folder needs --data-dir DIR (DIR/train/<class>/* and DIR/test/<class>/*)")
	}
	if nominalN < 1 {
		return Source{}, nil, invalidf("--dataset folder needs --nominal-size: the public number of training images (never counted from the private folder)")
	}
	// Reports and exports name the folder by its last element, not its
	// path (which may say whose the data is).
	name, err := FolderDatasetName(dir)
	if err != nil {
		return Source{}, nil, err
	}
	if s.Shape != nil && len(s.Shape) != 3 {
		return Source{}, nil, invalidf("an image shape is 3 numbers, C,H,W (channels, height, width), not %d", len(s.Shape))
	}
	info, err := data.InspectFolder(dir)
	if err != nil {
		return Source{}, nil, invalid(err)
	}
	c, h, w := info.C, info.H, info.W
	if spec != nil {
		for _, name := range data.Names() {
			if k, _ := data.Lookup(name); strings.HasSuffix(spec.Name, "-"+name) {
				c, h, w = k.C, k.H, k.W
			}
		}
	}
	if s.Shape != nil {
		c, h, w = s.Shape[0], s.Shape[1], s.Shape[2]
	}
	o := data.FolderOptions{C: c, H: h, W: w, NoResize: s.NoResize, Mean: s.Mean, Std: s.Std, NominalN: nominalN, Progress: s.Progress}
	if err := o.Check(); err != nil {
		return Source{}, nil, invalid(err)
	}
	if err := o.CheckMemory(info.TestN); err != nil {
		return Source{}, nil, invalid(err)
	}
	if spec == nil {
		switch {
		case c == 1 && h == 28 && w == 28:
			spec = &model.TBMNIST
		case c == 3 && h == 32 && w == 32:
			spec = &model.TBCIFAR10
		default:
			return Source{}, nil, invalidf("%s: images of %d channel(s), %d×%d (the first test image's), have no default network: name one with --model, or the shape with --image-shape",
				textsafe.Quoted(dir), c, h, w)
		}
	}
	arch, err := model.NewArch(*spec, c, h, w, len(info.Classes))
	if err != nil {
		return Source{}, nil, invalidf("network %s on %d×%d×%d images of %d classes: %v", spec.Name, c, h, w, len(info.Classes), err)
	}
	input := model.Input{Dataset: FolderName, Classes: info.Classes, Mean: s.Mean, Std: s.Std}
	kept := FolderSettings{Mean: s.Mean, Std: s.Std, NoResize: s.NoResize, Shape: s.Shape}
	load := func(ctx context.Context, warn func(string)) (*data.Dataset, *data.Dataset, error) {
		o := o
		o.Warn = warn
		train, test, _, err := data.LoadFolder(ctx, dir, o)
		if err != nil && ctx.Err() == nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		return train, test, err
	}
	read := &folderRef{C: c, H: h, W: w, NoResize: s.NoResize, Mean: s.Mean, Std: s.Std, NominalN: nominalN}
	src := Source{Name: name, Dir: dir, Arch: arch, NominalN: nominalN, Input: input, folder: &kept, read: read, loadContext: load,
		Load: func() (*data.Dataset, *data.Dataset, error) { return load(context.Background(), nil) }}
	return src, info.Classes, nil
}

// folderRef is how a job's worker reads an image folder (data.LoadFolder):
// the curator's public settings, resolved — the input shape, the resizing
// rule, the pixel constants and the folder's own nominal size (which
// bounds the training images read). It travels in the job's dataRef, so
// a worker reads its copy of the folder as the curator read its own; the
// content digest (dataDigest) then says whether the two copies agree.
type folderRef struct {
	C        int       `json:"c"`
	H        int       `json:"h"`
	W        int       `json:"w"`
	NoResize bool      `json:"no_resize,omitempty"`
	Mean     []float64 `json:"mean,omitempty"`
	Std      []float64 `json:"std,omitempty"`
	NominalN int       `json:"nominal_n"`
}

// options are f as data.FolderOptions (no progress, no warning: a worker's
// notes about the private folder stay unsaid).
func (f folderRef) options() data.FolderOptions {
	return data.FolderOptions{C: f.C, H: f.H, W: f.W, NoResize: f.NoResize, Mean: f.Mean, Std: f.Std, NominalN: f.NominalN}
}

// loadFolderRef reads the image folder dir as f says, for a job (a
// worker's copy): its errors are data.LoadFolder's, f's own refusals
// (data.FolderOptions.Check) wrapping runner.ErrInvalidInput.
func loadFolderRef(dir string, f folderRef) (train, test *data.Dataset, err error) {
	o := f.options()
	if err := o.Check(); err != nil {
		return nil, nil, fmt.Errorf("job: image folder settings: %v: %w", err, runner.ErrInvalidInput)
	}
	train, test, _, err = data.LoadFolder(context.Background(), dir, o)
	if err != nil {
		return nil, nil, fmt.Errorf("loading image folder %s: %w", textsafe.Quoted(dir), err)
	}
	return train, test, nil
}
