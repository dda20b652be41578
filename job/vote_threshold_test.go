package job

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/tuning"
)

// TestVoteThresholdRule: PlanVote's secure-sum threshold is the least t
// with 2t > n + c (at least 2), and settings where ⌈(1−f)n⌉ < t are
// refused with ErrInvalid. The n = 4, f = ½ row is the split-U3 attack's
// setting, which used to run at t = 2.
func TestVoteThresholdRule(t *testing.T) {
	src := Source{Name: "mnist", Arch: model.MNIST, NominalN: 6000}
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: federated.LearningRate, Values: []float64{0.01, 0.1}}}}
	for _, c := range []struct {
		n    int
		f    float64
		c, t int // t = 0: refused
	}{
		{2, 0, 0, 2}, {2, 0, 1, 2}, {3, 0, 0, 2}, {3, 0.3, 0, 2}, {4, 0, 0, 3}, {4, 0.25, 0, 3}, {4, 0.5, 0, 0},
		{4, 0, 1, 3}, {4, 0, 2, 4}, {4, 0.25, 2, 0}, {10, 0.3, 0, 6}, {10, 0.3, 3, 7}, {10, 0.3, 4, 0},
		{255, 0.1, 10, 133}, {5, 0, 5, 0}, {5, 0, -1, 0},
	} {
		name := fmt.Sprintf("n = %d, f = %v, c = %d", c.n, c.f, c.c)
		s := VoteSpec{Data: src, Space: space, Epsilon: 8, Delta: 1e-5, VoteEpsilon: 2, Clients: c.n, VotesPerClient: 1, Dropout: c.f,
			Colluding: c.c, LocalEpochs: 1, BatchSize: 64, FinalTraining: federated.FinalNonPrivate, Rounds: 1, ClipNorm: 1}
		j, err := PlanVote(context.Background(), s)
		if c.t == 0 {
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: threshold %d, %v; want refused", name, j.Threshold, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if j.Threshold != c.t || 2*j.Threshold <= c.n+c.c || (j.Threshold > 2 && 2*(j.Threshold-1) > c.n+c.c) {
			t.Errorf("%s: threshold %d, want %d", name, j.Threshold, c.t)
		}
		// A job below the rule is refused by every client (Job.Check).
		j.Threshold--
		if j.Check() == nil {
			t.Errorf("%s: a job with t = %d passes Check", name, j.Threshold)
		}
	}
}
