package federated

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptune/dptune/privacy/accounting"
)

// Default client limits (Limits) of the command-line client.
const (
	// DefaultMaxEpsilon is the largest total ε a client accepts unless told
	// otherwise: 10, the top of the range in which DP-SGD is usually
	// reported (Ponomareva et al. 2023, "How to DP-fy ML", call ε ≤
	// 10 a reasonable level of protection).
	DefaultMaxEpsilon = 10
	// DefaultMaxDelta is the largest δ a client accepts unless told
	// otherwise.
	DefaultMaxDelta = 1e-5
)

// ErrRefused wraps every error of Limits.Check: the server's job promises
// less privacy than the client demands, and the client leaves before
// sending anything derived from its data.
var ErrRefused = errors.New("vote: the server's job is refused")

// Limits are a client's own demands on the job a server sends it. A server
// chooses every parameter of the job (the vote's noise and scale, the
// dropout fraction, the colluders c and the threshold t, the final
// training), so an active server could otherwise set the privacy itself;
// the client recomputes the guarantee from the job's public parameters and
// refuses a job that misses its limits.
type Limits struct {
	// MaxEpsilon and MaxDelta bound the job's total guarantee, which the
	// client recomputes with the RDP accountant at δ = MaxDelta (the job
	// carries no δ: the client asks whether the job is (MaxEpsilon,
	// MaxDelta)-DP): the vote at its fewest survivors,
	// Mechanism.Event(MinSurvivors()), composed with the final training's
	// event, Job.TrainingEvent (client-level with FinalDPFedAvg,
	// example-level with FinalDPSGD). Both must be positive.
	MaxEpsilon, MaxDelta float64
	// Colluding is the client's own assumption c of how many clients
	// collude with the server: the job's Colluding must be at least c,
	// and its Threshold at least Threshold(n, c) (both recomputed here).
	Colluding int
	// AllowNonPrivate accepts a job whose final training is
	// FinalNonPrivate (a model that is not private); the vote alone must
	// then meet MaxEpsilon. Without it such a job is refused.
	AllowNonPrivate bool
}

// Valid returns an error wrapping ErrRefused if l cannot be met by any job:
// ε not positive and finite, δ outside (0, 1), c negative.
func (l Limits) Valid() error {
	if !(l.MaxEpsilon > 0) || math.IsInf(l.MaxEpsilon, 0) {
		return fmt.Errorf("%w: the client's maximal ε %v must be positive and finite", ErrRefused, l.MaxEpsilon)
	}
	if err := accounting.CheckDelta(l.MaxDelta); err != nil {
		return fmt.Errorf("%w: the client's maximal δ: %v", ErrRefused, err)
	}
	if l.Colluding < 0 {
		return fmt.Errorf("%w: the client assumes %d colluding clients", ErrRefused, l.Colluding)
	}
	return nil
}

// Check returns an error wrapping ErrRefused if j misses l, or if l itself
// is invalid (Valid); j must have passed Job.Check.
func (l Limits) Check(j Job) error {
	if err := l.Valid(); err != nil {
		return err
	}
	if j.Colluding < l.Colluding || j.Mechanism.Colluding < l.Colluding {
		return fmt.Errorf("%w: it assumes %d clients colluding with the server, this client assumes %d", ErrRefused, j.Colluding, l.Colluding)
	}
	if t := Threshold(j.Clients, max(j.Colluding, l.Colluding)); j.Threshold < t {
		return fmt.Errorf("%w: threshold %d, but %d clients with %d colluding need t ≥ %d", ErrRefused, j.Threshold, j.Clients, max(j.Colluding, l.Colluding), t)
	}
	if j.Mechanism.MinSurvivors() < j.Threshold {
		return fmt.Errorf("%w: ⌈(1−f)n⌉ = %d survivors is below the threshold %d", ErrRefused, j.Mechanism.MinSurvivors(), j.Threshold)
	}
	events := []accounting.Event{j.Mechanism.Event(j.Mechanism.MinSurvivors())}
	if j.Final.Mode == FinalNonPrivate {
		if !l.AllowNonPrivate {
			return fmt.Errorf("%w: its final training is %s (the model is not private); allow it explicitly to take part", ErrRefused, FinalNonPrivate)
		}
	} else {
		ev, err := j.TrainingEvent()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrRefused, err)
		}
		events = append(events, ev)
	}
	g, err := accounting.RDP{}.Epsilon(accounting.Composed{Events: events}, l.MaxDelta)
	if err != nil {
		return fmt.Errorf("%w: its privacy cannot be computed: %v", ErrRefused, err)
	}
	// The server calibrated its noise to meet its ε exactly; allow for the
	// rounding of a recomputation in another order.
	if !(g.Epsilon <= l.MaxEpsilon*(1+1e-9)) {
		return fmt.Errorf("%w: it is only (ε = %.4g, δ = %g)-DP, this client accepts ε ≤ %g", ErrRefused, g.Epsilon, l.MaxDelta, l.MaxEpsilon)
	}
	return nil
}
