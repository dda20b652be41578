package job_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// keyedLocal is a durable runner's stand-in: a fixed invocation key, jobs in
// this process, every job recorded.
type keyedLocal struct {
	runner.Local
	key  [32]byte
	jobs *[]runner.Task
}

func (k keyedLocal) Key() [32]byte { return k.key }
func (k keyedLocal) Resumed() bool { return false }
func (k keyedLocal) Run(ctx context.Context, ts []runner.Task, done func(int, []byte) error) error {
	*k.jobs = append(*k.jobs, ts...)
	return k.Local.Run(ctx, ts, done)
}

// An unseeded tuning on a keyed runner draws everything from the
// invocation's key: the same key repeats the same jobs and release (what a
// resumed curator relies on), another key draws others; every job carries
// its own 256-bit key derived from the invocation's (so a retried attempt
// repeats its noise; keys differing in their last byte alone give other
// jobs, which a 64-bit seed could not) and secure noise, since the user gave
// no seed.
func TestTuneOnKeyedRunner(t *testing.T) {
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1, 0.5}}}}
	tune := func(key [32]byte, seed *uint64) ([]runner.Task, *job.Release) {
		var jobs []runner.Task
		rel, _, err := job.Tune(context.Background(), job.TuneSpec{
			Data: tinyMNIST(600), Tuner: "randomstop", Space: space, Epsilon: 8, Delta: 1e-5,
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
	k11, k12 := [32]byte{0: 11}, [32]byte{0: 11, 31: 1}
	a, relA := tune(k11, nil)
	b, relB := tune(k11, nil)
	c, _ := tune(k12, nil)
	if len(a) == 0 || !bytes.Equal(inputs(a), inputs(b)) {
		t.Fatalf("the same key gave other jobs (%d and %d)", len(a), len(b))
	}
	if (relA.Model == nil) != (relB.Model == nil) || relA.Model != nil && !equalFloats(relA.Model.Params, relB.Model.Params) {
		t.Error("the same key gave another release")
	}
	if bytes.Equal(inputs(a), inputs(c)) {
		t.Error("another key gave the same jobs")
	}
	check := func(jobs []runner.Task, keyed bool, want dpsgd.NoiseMode) {
		keys := map[string]bool{}
		for _, j := range jobs {
			var in struct {
				Seed  *uint64
				Key   *string
				Noise dpsgd.NoiseMode
			}
			if err := json.Unmarshal(j.Input, &in); err != nil {
				t.Fatal(err)
			}
			if keyed != (in.Key != nil) || keyed == (in.Seed != nil) || in.Noise != want {
				t.Errorf("job %s: seed %v, key %v, noise %v; want keyed %v and noise %v", j.ID, in.Seed, in.Key, in.Noise, keyed, want)
			}
			if in.Key != nil {
				if len(*in.Key) != 64 || keys[*in.Key] || *in.Key == hex.EncodeToString(k11[:]) {
					t.Errorf("job %s: key %s is not a fresh 32-byte subkey", j.ID, *in.Key)
				}
				keys[*in.Key] = true
			}
		}
	}
	check(a, true, dpsgd.NoiseSecure)
	seed := uint64(3)
	s, _ := tune(k11, &seed)
	check(s, false, dpsgd.NoiseFast)
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

// The doubling tuner on a keyed runner: every part run's job carries the
// part runs' 256-bit subkey of the invocation key (no 64-bit seed; each run
// derives its own key from it, tuning.PartitionScorer), and the same
// invocation key repeats the same jobs and the same release.
func TestDoublingOnKeyedRunner(t *testing.T) {
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1, 0.5}}, {Name: tuning.ClipNorm, Values: []float64{1}}}}
	tune := func(key [32]byte) ([]runner.Task, *job.Release) {
		var jobs []runner.Task
		rel, _, err := job.Tune(context.Background(), job.TuneSpec{
			Data: tinyMNIST(600), Tuner: "doubling", Space: space, Epsilon: 8, Delta: 1e-5, Epochs: 1, BatchSize: 50,
			ValSize: 100, Options: tuning.DoublingOptions{Partitions: 2, Epsilon0: 0.2, Granularity: 0.2, MaxIterations: 4, PartEpochs: 1}.Values(),
			Runner: keyedLocal{key: key, jobs: &jobs},
		})
		if err != nil {
			t.Fatal(err)
		}
		return jobs, rel
	}
	k := [32]byte{0: 7}
	a, relA := tune(k)
	b, relB := tune(k)
	if len(a) == 0 || len(a) != len(b) {
		t.Fatalf("%d and %d part runs", len(a), len(b))
	}
	keys := map[string]bool{}
	for i, j := range a {
		if !bytes.Equal(j.Input, b[i].Input) {
			t.Errorf("job %s differs under the same key", j.ID)
		}
		var in struct {
			Seed uint64
			Key  *string
		}
		if err := json.Unmarshal(j.Input, &in); err != nil {
			t.Fatal(err)
		}
		if in.Key == nil || len(*in.Key) != 64 || in.Seed != 0 || *in.Key == hex.EncodeToString(k[:]) {
			t.Errorf("job %s: seed %d, key %v: want a 32-byte subkey and no seed", j.ID, in.Seed, in.Key)
		} else {
			keys[*in.Key] = true
		}
	}
	if len(keys) != 1 {
		t.Errorf("the part runs carry %d scorer keys, want 1 (each run derives its own from it)", len(keys))
	}
	if relA.Model == nil || relB.Model == nil || !equalFloats(relA.Model.Params, relB.Model.Params) {
		t.Error("the same key gave another release")
	}
}
