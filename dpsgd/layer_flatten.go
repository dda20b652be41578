package dpsgd

import "github.com/dptune/dptune/model"

// A flatten has no stage: the engine's positions-major feature map of an
// example is already a feature vector, in (row, column, channel) order;
// the layers that read flat features with per-feature parameters permute
// theirs to match (model.Shape's FlatC, FlatHW). As the first layer it
// reads the dataset's [C, H, W] layout, PyTorch's flatten order.
func init() {
	register("flatten", rule{raw: true, build: func([]model.Layer, bool) (stage, int) { return nil, 1 }})
}
