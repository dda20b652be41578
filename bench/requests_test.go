package bench

import (
	"errors"
	"strings"
	"testing"

	"github.com/dptune/dptune/job"
)

// The benchmarks' requests are refused before any work with an error that
// wraps job.ErrInvalid and names the flag at fault.
func TestBenchRequestsRefused(t *testing.T) {
	noData := func() (job.Source, error) {
		t.Error("the data was read")
		return job.Source{}, errors.New("no data")
	}
	vote := VoteRequest{SimReps: 10, Reps: 10, Clients: []int{5}, AlphaClients: []int{10}, Alphas: []float64{1}, Epsilons: []float64{1},
		Delta: 1e-5, ClipNorm: 1, VotesPerClient: 5, LocalEpochs: 1, BatchSize: 64, Rounds: 3, SimOnly: true, Out: t.TempDir()}
	tuners := TunersRequest{LRStride: 2, ClipStride: 4, Epochs: 1, Seeds: 2, BatchSize: 256, Epsilon: 15, Delta: 1e-5, RefGamma: 0.01,
		Gammas: []float64{0.01}, Repeats: 200, ScoreNoise: 0.1}
	for _, c := range []struct {
		err  error
		want string
	}{
		{PerSampleRequest{BatchSizes: []int{256}}.Check(60000), "--steps 0 must be at least 1"},
		{PerSampleRequest{BatchSizes: []int{256}, Steps: 1, Plot: "x.jpg"}.Check(60000), `--plot "x.jpg" must name a .png file`},
		{PerSampleRequest{BatchSizes: []int{70000}, Steps: 1}.Check(60000), "--batch-size 70000 is outside [1, 60000]"},
		{func() error { r := vote; r.Reps = 0; _, _, err := r.Plan(noData); return err }(), "--reps 0 is outside [1, "},
		{func() error { r := vote; r.Clients = []int{1}; _, _, err := r.Plan(noData); return err }(), "--clients 1: need 2 … 255"},
		{func() error { r := vote; r.Alphas = []float64{0}; _, _, err := r.Plan(noData); return err }(), "--alphas 0: need 0 < α ≤ 1e6"},
		{func() error { r := vote; r.Epsilons = []float64{0}; _, _, err := r.Plan(noData); return err }(), "ε = 0: "},
		{func() error { r := tuners; r.Gammas = []float64{1}; return r.check(60000) }(), "γ = 1 is outside (0, 1)"},
		{func() error { r := tuners; r.BatchSize = 0; return r.check(60000) }(), "--batch-size 0 is outside [1, 60000]"},
		{func() error { r := tuners; r.ScoreNoise = -1; return r.check(60000) }(), "--score-noise -1 must be a finite non-negative number"},
	} {
		if !errors.Is(c.err, job.ErrInvalid) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%v, want %q wrapping job.ErrInvalid", c.err, c.want)
		}
	}
	if _, real, err := vote.Plan(noData); err != nil || real != nil {
		t.Errorf("the simulation alone: %v, real %v", err, real)
	}
}
