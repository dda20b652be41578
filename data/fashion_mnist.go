package data

import (
	"fmt"
	"os"
)

// FashionMNISTDir is where Debian's dataset-fashion-mnist package installs
// Fashion-MNIST's four IDX files (gzipped); `make deps` installs the
// package when the directory is missing.
const FashionMNISTDir = "/usr/share/datasets/fashion-mnist"

// FashionMNISTClasses are Fashion-MNIST's ten class names, label i the
// i-th (Xiao, Rasul & Vollgraf 2017, Table 1).
var FashionMNISTClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// Fashion-MNIST (Xiao, Rasul & Vollgraf 2017, arXiv:1708.07747): 60,000
// training and 10,000 test images of clothing, 28×28 grey, in MNIST's IDX
// layout, with real pixels (Debian's dataset-fashion-mnist package). Its
// pixels are left in [0, 1] (mean 0, standard deviation 1), as Tramèr &
// Boneh train on it, whose settings its networks take
// (job.NetworkDefaultsOn); trained by default with their end-to-end CNN
// ("tb-mnist") over DP-HyPO's MNIST grid ("mnist-dphypo").
func init() {
	Register(Named{Name: "fashion-mnist", TestN: 10000, NominalN: 60000, C: 1, H: 28, W: 28, Classes: 10,
		ClassNames: FashionMNISTClasses, Mean: []float64{0}, Std: []float64{1},
		Model: "tb-mnist", Space: "mnist-dphypo", Load: LoadFashionMNIST,
		DefaultDir: fashionMNISTDir, DefaultDirHelp: FashionMNISTDir + " (Debian's dataset-fashion-mnist, which make deps installs)", Rank: 2})
}

// fashionMNISTDir returns FashionMNISTDir, or an error saying how to
// install it when it does not exist.
func fashionMNISTDir() (string, error) {
	if st, err := os.Stat(FashionMNISTDir); err != nil || !st.IsDir() {
		return "", fmt.Errorf("Fashion-MNIST files not found in %s: install Debian's dataset-fashion-mnist package (`make deps` does, as root: apt-get install dataset-fashion-mnist) or pass --data-dir", FashionMNISTDir)
	}
	return FashionMNISTDir, nil
}

// LoadFashionMNIST reads Fashion-MNIST's training and test sets from dir,
// which holds the four IDX files under MNIST's names (train-images-idx3-ubyte,
// …, t10k-labels-idx1-ubyte), gzipped (NAME.gz, as Debian installs them) or
// not. Images come back as [N, 1, 28, 28] in [0, 1]; labels are 0–9
// (FashionMNISTClasses). Errors are LoadMNIST's.
func LoadFashionMNIST(dir string) (train, test *Dataset, err error) {
	return loadIDXPair(dir, "fashion-mnist", "Fashion-MNIST", nil, nil)
}
