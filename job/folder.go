package job

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
)

// FolderName is the dataset name of an image folder (`--dataset folder`).
const FolderName = "folder"

// FolderSettings are how an image folder becomes a network's input
// (data.FolderOptions): public per-channel Mean and Std of the pixels
// scaled to [0, 1] (nil: 0 and 1), NoResize to refuse images of another
// size instead of resizing them, and Progress for the decoding.
type FolderSettings struct {
	Mean     []float64                           `json:"mean,omitempty"`
	Std      []float64                           `json:"std,omitempty"`
	NoResize bool                                `json:"no_resize,omitempty"`
	Progress func(split string, done, total int) `json:"-"`
}

// FolderDataset returns the Source of the image folder dir
// (torchvision's ImageFolder layout: dir/train/<class>/*, dir/test/<class>/*;
// data.LoadFolder), training network (a built-in name or a .json spec;
// "" chooses by the first training image: 1-channel 28×28 trains tb-mnist,
// 3-channel 32×32 tb-cifar10, any other shape needs a network). The
// network's input is its dataset's image shape for a built-in network made
// for MNIST or CIFAR-10 (its name ends in "-mnist" or "-cifar10"), else the
// first training image's; images of another size are resized to it unless
// s.NoResize. The dataset is named "folder:<the directory's last element>"
// in reports, exports and budget files. nominalN is the public size of the
// training set, required:
// the folder's count is never used. The classes are the training
// directories' names, returned too. Errors wrap ErrInvalid: no such
// folder, a missing or extra test class, fewer than 2 classes, a first
// image that is not PNG or JPEG, a shape without a default network, a
// network that does not fit, a missing nominal size, bad constants.
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

// folderDataset is FolderDataset with the network as a spec (nil: by the
// images' shape).
func folderDataset(dir string, spec *model.Spec, nominalN int, s FolderSettings) (Source, []string, error) {
	if dir == "" {
		return Source{}, nil, invalidf("--dataset folder needs --data-dir DIR (DIR/train/<class>/* and DIR/test/<class>/*)")
	}
	if nominalN < 1 {
		return Source{}, nil, invalidf("--dataset folder needs --nominal-size: the public number of training images (never counted from the private folder)")
	}
	classes, err := data.FolderClasses(dir)
	if err != nil {
		return Source{}, nil, invalid(err)
	}
	c, h, w, err := data.FolderShape(dir)
	if err != nil {
		return Source{}, nil, invalid(err)
	}
	if spec == nil {
		switch {
		case c == 1 && h == 28 && w == 28:
			spec = &model.TBMNIST
		case c == 3 && h == 32 && w == 32:
			spec = &model.TBCIFAR10
		default:
			return Source{}, nil, invalidf("%s: images of %d channel(s), %d×%d, have no default network: name one with --model", dir, c, h, w)
		}
	}
	for _, name := range data.Names() {
		if k, _ := data.Lookup(name); strings.HasSuffix(spec.Name, "-"+name) {
			c, h, w = k.C, k.H, k.W
		}
	}
	arch, err := model.NewArch(*spec, c, h, w, len(classes))
	if err != nil {
		return Source{}, nil, invalidf("network %s on %d×%d×%d images of %d classes: %v", spec.Name, c, h, w, len(classes), err)
	}
	o := data.FolderOptions{C: c, H: h, W: w, NoResize: s.NoResize, Mean: s.Mean, Std: s.Std, Progress: s.Progress}
	if err := o.Check(); err != nil {
		return Source{}, nil, invalid(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Source{}, nil, invalid(err)
	}
	// Reports and exports name the folder by its last element, not its
	// path (which may say whose the data is).
	abs = filepath.Base(abs)
	input := model.Input{Dataset: FolderName, Classes: classes, Mean: s.Mean, Std: s.Std}
	kept := FolderSettings{Mean: s.Mean, Std: s.Std, NoResize: s.NoResize}
	load := func(ctx context.Context) (*data.Dataset, *data.Dataset, error) {
		train, test, _, err := data.LoadFolder(ctx, dir, o)
		if err != nil && ctx.Err() == nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		return train, test, err
	}
	src := Source{Name: FolderName + ":" + abs, Dir: dir, Arch: arch, NominalN: nominalN, Input: input, folder: &kept, loadContext: load,
		Load: func() (*data.Dataset, *data.Dataset, error) { return load(context.Background()) }}
	return src, classes, nil
}
