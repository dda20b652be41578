package job

import (
	"context"
	"fmt"

	"github.com/dptune/dptune/model"
)

// EvaluateSaved is the accuracy and mean cross-entropy on src's test set
// of the model saved in dir (by Train or Tune: model.Load). A missing dir
// name and a model whose input or classes are not src's are refused before
// the data is read (errors wrapping ErrInvalid); a model whose parameters
// are not all finite is an error too.
func EvaluateSaved(ctx context.Context, dir string, src Source) (model.Metrics, error) {
	if dir == "" {
		return model.Metrics{}, invalidf("--model DIR is required")
	}
	net, _, err := model.Load(dir)
	if err != nil {
		return model.Metrics{}, err
	}
	if a, b := net.Arch, src.Arch; !a.SameInput(b) {
		return model.Metrics{}, invalidf("the model in %s reads %d×%d×%d inputs of %d classes; %s has %d×%d×%d inputs of %d", dir,
			a.C, a.H, a.W, a.Classes, src.Name, b.C, b.H, b.W, b.Classes)
	}
	if err := net.CheckFinite(); err != nil {
		return model.Metrics{}, fmt.Errorf("the model in %s: %w", dir, err)
	}
	_, test, err := src.Load()
	if err != nil {
		return model.Metrics{}, err
	}
	return Evaluate(ctx, net, test.X, test.Y)
}
