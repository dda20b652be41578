package accounting

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Guarantee is an (ε, δ)-DP guarantee an accountant derived.
type Guarantee struct {
	Epsilon    float64 `json:"epsilon"` // nats; +Inf when the events have no guarantee
	Delta      float64 `json:"delta"`
	Accountant string  `json:"accountant"`
	// Order is the RDP order α at which the RDP accountant's bound was
	// tightest (zero for other accountants).
	Order float64 `json:"order,omitempty"`
	// Approximate is true when ε is an approximation rather than a proved
	// upper bound (the GDP accountant's central limit theorem).
	Approximate bool `json:"approximate,omitempty"`
}

// Accountant bounds the privacy loss of events.
type Accountant interface {
	// Name is the accountant's short name, e.g. "rdp".
	Name() string
	// Epsilon returns the smallest ε the accountant can certify for e at
	// delta. It returns an error wrapping ErrUnsupported if e contains an
	// event the accountant cannot count, and an error if delta ∉ (0, 1).
	Epsilon(e Event, delta float64) (Guarantee, error)
}

// EpsilonContext is acc.Epsilon(e, delta), stopping with ctx's error soon
// after ctx is cancelled where acc's computation can be long (the RDP
// accountant's GaussianSelect integrals); other accountants answer within
// bounded time and are called as they are.
func EpsilonContext(ctx context.Context, acc Accountant, e Event, delta float64) (Guarantee, error) {
	if c, ok := acc.(interface {
		EpsilonContext(context.Context, Event, float64) (Guarantee, error)
	}); ok {
		return c.EpsilonContext(ctx, e, delta)
	}
	if err := ctx.Err(); err != nil {
		return Guarantee{}, err
	}
	return acc.Epsilon(e, delta)
}

// ErrUnsupported is wrapped by the error an accountant returns for an event
// it cannot count.
var ErrUnsupported = errors.New("event not supported by this accountant")

func unsupported(acc string, e Event) error {
	if e == nil {
		return fmt.Errorf("accounting: the %s accountant got a nil event", acc)
	}
	return fmt.Errorf("accounting: the %s accountant cannot count a %q event: %w", acc, e.Type(), ErrUnsupported)
}

// CheckDelta returns an error unless 0 < delta < 1.
func CheckDelta(delta float64) error {
	if !(delta > 0 && delta < 1) {
		return fmt.Errorf("δ = %v is outside (0, 1)", delta)
	}
	return nil
}

// CheckEpsilon returns an error unless 0 < eps < 1e300, the bound dptune
// takes for "finite" (far beyond any meaningful guarantee; e^ε overflows
// float64 from ε ≈ 709 on), naming which side eps is on.
func CheckEpsilon(eps float64) error {
	switch {
	case math.IsNaN(eps):
		return fmt.Errorf("ε = %v is not a number", eps)
	case !(eps > 0):
		return fmt.Errorf("ε = %v must be positive", eps)
	case !(eps < 1e300):
		return fmt.Errorf("ε = %v is not below 1e+300, the largest ε dptune accepts (an ε that large guarantees nothing)", eps)
	}
	return nil
}
