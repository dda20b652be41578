package job_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/dpsgd/accounting"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// keyedLocal is a durable runner's stand-in: a fixed invocation key, jobs in
// this process, every job recorded.
type keyedLocal struct {
	runner.Local
	key  uint64
	jobs *[]runner.Task
}

func (k keyedLocal) Key() uint64   { return k.key }
func (k keyedLocal) Resumed() bool { return false }
func (k keyedLocal) Run(ctx context.Context, ts []runner.Task, done func(int, []byte) error) error {
	*k.jobs = append(*k.jobs, ts...)
	return k.Local.Run(ctx, ts, done)
}

// An unseeded tuning on a keyed runner draws everything from the
// invocation's key: the same key repeats the same jobs and release (what a
// resumed curator relies on), another key draws others; every job carries
// a seed (so a retried attempt repeats its noise) and secure noise, since
// the user gave no seed.
func TestTuneOnKeyedRunner(t *testing.T) {
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1, 0.5}}}}
	tune := func(key uint64, seed *uint64) ([]runner.Task, *job.Release) {
		var jobs []runner.Task
		rel, _, err := job.Tune(context.Background(), job.TuneSpec{
			Data: tinyMNIST(600), Tuner: job.RandomStop, Space: space, Epsilon: 8, Delta: 1e-5,
			Epochs: 1, BatchSize: 50, Repetitions: accounting.PoissonRepetitions(4),
			Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: seed, Runner: keyedLocal{key: key, jobs: &jobs},
		})
		if err != nil {
			t.Fatal(err)
		}
		return jobs, rel
	}
	inputs := func(jobs []runner.Task) []byte {
		var b bytes.Buffer
		for _, j := range jobs {
			b.Write(j.Input)
		}
		return b.Bytes()
	}
	a, relA := tune(11, nil)
	b, relB := tune(11, nil)
	c, _ := tune(12, nil)
	if len(a) == 0 || !bytes.Equal(inputs(a), inputs(b)) {
		t.Fatalf("the same key gave other jobs (%d and %d)", len(a), len(b))
	}
	if (relA.Model == nil) != (relB.Model == nil) || relA.Model != nil && !equalFloats(relA.Model.Params, relB.Model.Params) {
		t.Error("the same key gave another release")
	}
	if bytes.Equal(inputs(a), inputs(c)) {
		t.Error("another key gave the same jobs")
	}
	check := func(jobs []runner.Task, want dpsgd.NoiseMode) {
		for _, j := range jobs {
			var in struct {
				Seed  *uint64
				Noise dpsgd.NoiseMode
			}
			if err := json.Unmarshal(j.Input, &in); err != nil {
				t.Fatal(err)
			}
			if in.Seed == nil || in.Noise != want {
				t.Errorf("job %s: seed %v, noise %v, want a seed and noise %v", j.ID, in.Seed, in.Noise, want)
			}
		}
	}
	check(a, dpsgd.NoiseSecure)
	seed := uint64(3)
	s, _ := tune(11, &seed)
	check(s, dpsgd.NoiseFast)
}

func equalFloats(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
