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
	var correct int
	loss, err := forwardAll(ctx, net, x, y, func(i int, row []float32) {
		best := 0
		for o, v := range row {
			if v > row[best] {
				best = o
			}
		}
		if best == int(y[i]) {
			correct++
		}
	})
	if err != nil || len(y) == 0 {
		return model.Metrics{}, err
	}
	return model.Metrics{Accuracy: float64(correct) / float64(len(y)), Loss: loss / float64(len(y)), N: len(y), Correct: correct}, nil
}

// Logits returns net's logits ([n, classes], row-major) for the n examples
// of x ([n, C, H, W]), by the native engine's forward pass (what Evaluate
// scores). It stops early with ctx's error if ctx is cancelled.
func Logits(ctx context.Context, net *model.Net, x []float32) ([]float32, error) {
	c, h, wd := net.Arch.Input()
	n := len(x) / max(1, c*h*wd)
	O := net.Arch.Classes
	out := make([]float32, n*O)
	_, err := forwardAll(ctx, net, x, make([]uint8, n), func(i int, row []float32) { copy(out[i*O:(i+1)*O], row) })
	if err != nil {
		return nil, err
	}
	return out, nil
}

// forwardAll runs net's forward pass over every example of x with labels
// y, chunk by chunk, calls each(i, logits of example i) in order, and
// returns the summed cross-entropy.
func forwardAll(ctx context.Context, net *model.Net, x []float32, y []uint8, each func(i int, row []float32)) (float64, error) {
	a := net.Arch
	c, h, wd := a.Input()
	size := c * h * wd
	if len(x) != len(y)*size {
		return 0, fmt.Errorf("dpsgd: %d values for %d examples of size %d", len(x), len(y), size)
	}
	for i, l := range y {
		if int(l) >= a.Classes {
			return 0, fmt.Errorf("dpsgd: example %d has label %d of %d classes", i, l, a.Classes)
		}
	}
	e, err := newNative(net)
	if err != nil {
		return 0, err
	}
	e.prepare()
	w := e.newWorker()
	// Inputs some run holds (HoldInputs, Train) are read, not normalised.
	if c, release, _ := e.acquireFirstStage(ctx, 1, x, len(y), false); c != nil {
		w.cache = c
		defer release()
	}
	idx := make([]int, 0, e.chunk)
	var fw [MaxLayers]time.Duration
	var loss float64
	O := a.Classes
	logits := w.acts[len(w.acts)-1]
	for start := 0; start < len(y); start += e.chunk {
		if start%(64*e.chunk) == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		idx = idx[:0]
		for i := start; i < min(start+e.chunk, len(y)); i++ {
			idx = append(idx, i)
		}
		loss += w.forward(x, y, idx, &fw)
		for k, i := range idx {
			each(i, logits[k*O:(k+1)*O])
		}
	}
	return loss, nil
}
