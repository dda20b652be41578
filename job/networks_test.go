package job

import (
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
