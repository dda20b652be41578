package dpsgd

import (
	"context"
	"fmt"
	"time"

	"github.com/dptune/dptune/model"
)

// Evaluate runs net over the n examples of x ([n, C, H, W]) with labels y
// and returns accuracy and mean cross-entropy, like model.Net.Evaluate (its
// gorgonia reference) but with the native engine's forward pass: faster and
// allocation-light. It stops early with ctx's error if ctx is cancelled.
func Evaluate(ctx context.Context, net *model.Net, x []float32, y []uint8) (model.Metrics, error) {
	a := net.Arch
	c, h, wd := a.Input()
	size := c * h * wd
	if len(x) != len(y)*size {
		return model.Metrics{}, fmt.Errorf("dpsgd: %d values for %d examples of size %d", len(x), len(y), size)
	}
	for i, l := range y {
		if int(l) >= a.Classes {
			return model.Metrics{}, fmt.Errorf("dpsgd: example %d has label %d of %d classes", i, l, a.Classes)
		}
	}
	e, err := newNative(net)
	if err != nil {
		return model.Metrics{}, err
	}
	e.prepare()
	w := e.newWorker()
	idx := make([]int, 0, e.chunk)
	var fw [MaxLayers]time.Duration
	var loss float64
	var correct int
	O := a.Classes
	logits := w.acts[len(w.acts)-1]
	for start := 0; start < len(y); start += e.chunk {
		if start%(64*e.chunk) == 0 {
			if err := ctx.Err(); err != nil {
				return model.Metrics{}, err
			}
		}
		idx = idx[:0]
		for i := start; i < min(start+e.chunk, len(y)); i++ {
			idx = append(idx, i)
		}
		loss += w.forward(x, y, idx, &fw)
		for k, i := range idx {
			row := logits[k*O : (k+1)*O]
			best := 0
			for o, v := range row {
				if v > row[best] {
					best = o
				}
			}
			if best == int(y[i]) {
				correct++
			}
		}
	}
	if len(y) == 0 {
		return model.Metrics{}, nil
	}
	return model.Metrics{Accuracy: float64(correct) / float64(len(y)), Loss: loss / float64(len(y)), N: len(y), Correct: correct}, nil
}
