package job

import (
	"strings"
	"testing"

	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// The built-in ScatterNet spaces resolve on their datasets: each network
// choice loads, fits the dataset's images and shares the front end of the
// space's first network (so the features are computed once); the default
// space of a ScatterNet network is its dataset's.
func TestScatterSpacesResolve(t *testing.T) {
	for _, c := range []struct{ dataset, net, space string }{
		{"mnist", "scatter-linear-mnist", "scatter-mnist"},
		{"cifar10", "scatter-linear-cifar10", "scatter-cifar10"},
	} {
		src, err := Dataset(c.dataset, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		spec, err := model.LoadSpec(c.net)
		if err != nil {
			t.Fatal(err)
		}
		if src, err = src.WithModel(spec); err != nil {
			t.Fatal(err)
		}
		if got := DefaultSpaceName(src); got != c.space {
			t.Errorf("%s: default space %q, want %q", c.net, got, c.space)
		}
		space, err := LoadSpace(c.space, c.dataset)
		if err != nil {
			t.Fatal(err)
		}
		nets, err := networksOf(src, space)
		if err != nil {
			t.Fatalf("%s: %v", c.space, err)
		}
		if len(nets) != 2 || space.Size() < 64 {
			t.Errorf("%s: %d networks, %d candidates", c.space, len(nets), space.Size())
		}
		h := tuning.Hyper{Arch: src.Arch, Networks: nets, NominalN: src.NominalN - 5000, Epochs: 1}
		if err := h.CheckRuns(space); err != nil {
			t.Errorf("%s: %v", c.space, err)
		}
	}
	// A network space on a network without a front end: the default is
	// the dataset's, and a ScatterNet choice is refused.
	src, err := Dataset("mnist", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got := DefaultSpaceName(src); got != "" {
		t.Errorf("tb-mnist: default space %q, want the dataset's", got)
	}
	space, _ := LoadSpace("scatter-mnist", "mnist")
	if _, err := networksOf(src, space); err == nil {
		t.Error("ScatterNet choices accepted for tb-mnist's raw images")
	}
}

// A built-in network's settings are per dataset where the source publishes
// them per dataset (Tramèr & Boneh's Fashion-MNIST settings differ from
// their MNIST ones), else those of the dataset it was made for.
func TestNetworkDefaultsPerDataset(t *testing.T) {
	for _, tc := range []struct {
		spec        model.Spec
		dataset     string
		batch       int
		lr          float64
		ok          bool
		sourceHints string
	}{
		{model.ScatterLinearMNIST, "mnist", 4096, 4, true, "validation split"},
		{model.ScatterLinearMNIST, "fashion-mnist", 8192, 16, true, "group normalisation"},
		{model.ScatterCNNMNIST, "fashion-mnist", 2048, 4, true, "group normalisation"},
		{model.TBMNIST, "fashion-mnist", 2048, 4, true, "end-to-end CNN"},
		{model.TBMNIST, "mnist", 0, 0, false, ""},
		{model.ScatterLinearMNIST, "folder:digits", 4096, 4, true, "validation split"},
		{model.ScatterLinearCIFAR10, "cifar10", 8192, 4, true, "CIFAR-10"},
	} {
		d, ok := NetworkDefaultsOn(tc.spec, tc.dataset)
		if ok != tc.ok || d.BatchSize != tc.batch || d.LearningRate != tc.lr || !strings.Contains(d.Source, tc.sourceHints) {
			t.Errorf("%s on %s: %+v, %v", tc.spec.Name, tc.dataset, d, ok)
		}
	}
	if d, ok := NetworkDefaults(model.ScatterLinearMNIST); !ok || d.BatchSize != 4096 {
		t.Errorf("scatter-linear-mnist on its own dataset: %+v, %v", d, ok)
	}
}
