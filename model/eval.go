package model

import (
	"context"
	"fmt"
	"math"
)

// EvalBatch is the batch size Evaluate uses.
const EvalBatch = 500

// Metrics are a network's accuracy and mean cross-entropy on a dataset.
type Metrics struct {
	Accuracy float64 `json:"accuracy"` // fraction of examples whose argmax logit is the label
	Loss     float64 `json:"loss"`     // mean softmax cross-entropy, nats
	N        int     `json:"n"`
	Correct  int     `json:"correct"` // examples whose argmax logit is the label
}

// Evaluate runs the network over the n examples of x ([n, C, H, W]) with
// labels y, in batches of EvalBatch, and returns accuracy and mean loss. It
// stops early with ctx's error if ctx is cancelled.
func (n *Net) Evaluate(ctx context.Context, x []float32, y []uint8) (Metrics, error) {
	c, h, w := n.Arch.Input()
	size := c * h * w
	if len(x) != len(y)*size {
		return Metrics{}, fmt.Errorf("model: %d values for %d examples of size %d", len(x), len(y), size)
	}
	B := min(EvalBatch, max(len(y), 1))
	g, err := n.NewGraph(B, Forward)
	if err != nil {
		return Metrics{}, err
	}
	idx := make([]int, 0, B)
	var correct int
	var loss float64
	k := n.Arch.Classes
	for start := 0; start < len(y); start += B {
		if err := ctx.Err(); err != nil {
			return Metrics{}, err
		}
		idx = idx[:0]
		for i := start; i < min(start+B, len(y)); i++ {
			idx = append(idx, i)
		}
		if err := g.SetBatch(x, y, idx); err != nil {
			return Metrics{}, err
		}
		if err := g.Run(); err != nil {
			return Metrics{}, err
		}
		logits := g.Logits()
		for j, i := range idx {
			row := logits[j*k : (j+1)*k]
			loss += CrossEntropy(row, int(y[i]))
			if argmax(row) == int(y[i]) {
				correct++
			}
		}
	}
	if len(y) == 0 {
		return Metrics{}, nil
	}
	return Metrics{Accuracy: float64(correct) / float64(len(y)), Loss: loss / float64(len(y)), N: len(y), Correct: correct}, nil
}

// CrossEntropy is −log softmax(logits)[label], computed in float64 with the
// log-sum-exp shift.
func CrossEntropy(logits []float32, label int) float64 {
	m := math.Inf(-1)
	for _, v := range logits {
		m = math.Max(m, float64(v))
	}
	var s float64
	for _, v := range logits {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s) - float64(logits[label])
}

func argmax(v []float32) int {
	best := 0
	for i := range v {
		if v[i] > v[best] {
			best = i
		}
	}
	return best
}
