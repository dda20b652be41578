package dpsgd

import (
	"testing"

	"github.com/dptune/dptune/model"
)

// The layer norm agrees with gorgonia's batch-of-one autodiff wherever it
// can sit: first (on the transposed input), on a feature map, on the
// flatten of the network's input, on the flatten of an inner feature map
// (features in the engine's (position, channel) order, γ and β in
// PyTorch's) and after a linear layer.
func TestLayerNormMatchesReference(t *testing.T) {
	for _, c := range []struct {
		c, h, w int
		layers  []model.LayerSpec
	}{
		{3, 6, 7, []model.LayerSpec{model.LayerNorm(), model.Conv2d(4, 3, 1, 1), model.Flatten(), model.Linear(3)}},
		{2, 8, 8, []model.LayerSpec{model.Conv2d(6, 3, 1, 1), model.LayerNorm(), model.SiLU(), model.MaxPool2d(2, 2),
			model.Flatten(), model.LayerNorm(), model.Linear(5), model.LayerNorm(), model.Tanh(), model.Linear(3)}},
		{1, 5, 5, []model.LayerSpec{model.Flatten(), model.LayerNorm(), model.Linear(3)}},
		{2, 6, 6, []model.LayerSpec{model.Conv2d(5, 2, 2, 0), model.ReLU(), model.LayerNorm(), model.Flatten(), model.Linear(3)}},
	} {
		a, err := model.NewArch(model.Spec{Name: "ln", Layers: c.layers}, c.c, c.h, c.w, 3)
		if err != nil {
			t.Fatal(err)
		}
		checkAgainstReference(t, a)
	}
}
