package dpsgd

import "github.com/dptune/dptune/model"

// A scatter front end (model.ScatterSpec) has no stage: the engine's input
// is already its output, precomputed once per dataset (model.Arch.Input),
// and being the first layer and parameter-free it needs no backward pass.
// The engine reads that input positions-major, like any feature map.
func init() {
	register("scatter", rule{build: func([]model.Layer, bool) (stage, int) { return nil, 1 }})
}
