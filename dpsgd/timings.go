package dpsgd

import (
	"fmt"
	"time"
)

// Phase is a part of a DP-SGD step whose time Train and the engine measure.
type Phase int

const (
	PhaseSampling  Phase = iota // Poisson sampling of the batch
	PhaseForward                // forward pass and loss
	PhaseBackward               // backpropagation to the layer outputs and inputs
	PhasePerSample              // per-example gradients and norms
	PhaseClip                   // clip factors and the clipped (or plain) gradient sum
	PhaseNoise                  // Gaussian noise
	PhaseUpdate                 // momentum and parameter update
	NumPhases
)

var phaseNames = [NumPhases]string{"sampling", "forward", "backward", "per_sample", "clip", "noise", "update"}

func (p Phase) String() string {
	if p < 0 || p >= NumPhases {
		return fmt.Sprintf("Phase(%d)", int(p))
	}
	return phaseNames[p]
}

// MaxLayers bounds the layers with parameters Timings records (deeper
// layers count in the last).
const MaxLayers = 16

// Timings accumulate the time spent per phase and, for the engine's
// forward and backward phases, per layer with parameters (its time includes
// that of the layers without parameters after it; a layer's backward time
// includes its per-example
// gradient). Engine phases are wall time averaged over the engine's workers.
type Timings struct {
	Steps    int
	Phase    [NumPhases]time.Duration
	Forward  [MaxLayers]time.Duration
	Backward [MaxLayers]time.Duration
}

// Add adds o to t.
func (t *Timings) Add(o *Timings) {
	t.Steps += o.Steps
	for i := range t.Phase {
		t.Phase[i] += o.Phase[i]
	}
	for i := range t.Forward {
		t.Forward[i] += o.Forward[i]
		t.Backward[i] += o.Backward[i]
	}
}

// Timed is implemented by engines that measure their own phases.
type Timed interface {
	// TakeTimings adds the engine's timings since the last call to t and
	// resets them.
	TakeTimings(t *Timings)
}

// stopwatch measures consecutive intervals.
type stopwatch struct{ last time.Time }

func (s *stopwatch) start() { s.last = time.Now() }

// lap returns the time since the last start or lap.
func (s *stopwatch) lap() time.Duration {
	now := time.Now()
	d := now.Sub(s.last)
	s.last = now
	return d
}
