package dpsgd

import (
	"context"
	"slices"
	"testing"

	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// copyState is a deep copy of s (Checkpoint's slices are the run's own).
func copyState(s State) State {
	s.Params, s.Buffers, s.Velocity = slices.Clone(s.Params), slices.Clone(s.Buffers), slices.Clone(s.Velocity)
	s.EMA, s.Sampling, s.Noise = slices.Clone(s.EMA), slices.Clone(s.Sampling), slices.Clone(s.Noise)
	return s
}

// A seeded run resumed from any checkpoint ends bit for bit as the run
// that was never stopped (momentum, schedule, moving average, data
// normalisation and both random streams carried over), and its event
// counts every step once.
func TestResumeIsBitForBit(t *testing.T) {
	for _, c := range []struct {
		name string
		arch model.Arch
		ema  float64
	}{{"plain", model.MNIST, 0}, {"ema", model.MNIST, 0.9}} {
		net0, train := smallSet(t, 200)
		init := slices.Clone(net0.Params)
		cfg := Config{NoiseMultiplier: 1.1, ClipNorm: 1, SamplingRate: 0.1, Steps: 30, LearningRate: 0.2, Momentum: 0.9,
			Schedule: CosineLR, EMADecay: c.ema, Seed: seed(11)}
		// The uninterrupted run, checkpointing every 10 steps.
		var saved []State
		full := cfg
		full.CheckpointEvery = 10
		full.Checkpoint = func(s State) error { saved = append(saved, copyState(s)); return nil }
		res, err := Train(context.Background(), net0, train, full, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(saved) != 2 || saved[0].Step != 10 || saved[1].Step != 20 {
			t.Fatalf("%s: checkpoints at %v", c.name, saved)
		}
		for _, st := range saved {
			net, _ := smallSet(t, 200)
			copy(net.Params, init) // Resume must overwrite them anyway
			clear(net.Params)
			resumed := cfg
			resumed.Resume = &st
			r, err := Train(context.Background(), net, train, resumed, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(net.Params, net0.Params) {
				t.Errorf("%s: resumed at step %d, the parameters differ from the uninterrupted run's", c.name, st.Step)
			}
			if r.Steps != 30 || r.Event != accounting.DPSGD(1.1, 0.1, 30) || r.Event != res.Event {
				t.Errorf("%s: resumed run's steps %d, event %v", c.name, r.Steps, r.Event)
			}
		}
	}
}

// A state that does not fit the run is refused before any step.
func TestResumeRefusesAForeignState(t *testing.T) {
	net, train := smallSet(t, 100)
	cfg := Config{NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: 0.1, Steps: 20, LearningRate: 0.1, Seed: seed(1)}
	good := State{Step: 5, Params: make([]float32, len(net.Params)), Velocity: make([]float32, len(net.Params)), Sampling: []byte{1}, Noise: []byte{1}}
	for name, mutate := range map[string]func(*State){
		"step past the end": func(s *State) { s.Step = 20 },
		"wrong size":        func(s *State) { s.Params = s.Params[1:] },
		"no streams":        func(s *State) { s.Sampling = nil },
		"corrupt stream":    func(s *State) {},
		"moving average":    func(s *State) { s.EMA = make([]float32, len(s.Params)) },
	} {
		s := good
		mutate(&s)
		c := cfg
		c.Resume = &s
		if res, err := Train(context.Background(), net, train, c, nil, nil); err == nil || res.Steps > s.Step {
			t.Errorf("%s: resumed (%d steps, %v)", name, res.Steps, err)
		}
	}
}
