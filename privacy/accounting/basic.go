package accounting

import (
	"errors"
	"fmt"
	"math"
)

// Basic is the pure-DP accountant: it knows each event by an (ε, δ)
// guarantee and composes them by basic composition, adding ε and δ (Dwork &
// Roth 2014, Theorem 3.16). It counts Laplace, EpsilonDelta, AboveThreshold,
// NonPrivate, Poisson subsampling of those (amplification by subsampling:
// (log(1 + q(e^ε − 1)), qδ), Balle, Barthe, Gaboardi 2018, Theorem 8), and
// RepeatAndSelect / AdaptiveRepeatAndSelect of a pure-DP base with TNB(η, γ)
// repetitions: ((2+η)(ε + log(C/c)), 0) (DP-HyPO, Theorem 2; for C = c it is
// Papernot & Steinke 2022, and η = 1 is Liu & Talwar 2019's 3ε). The
// Gaussian mechanism has no pure guarantee and is not counted.
type Basic struct{}

// Name returns "basic".
func (Basic) Name() string { return "basic" }

// Epsilon returns the summed ε of e. It returns an error if the summed δ of
// e exceeds delta.
func (Basic) Epsilon(e Event, delta float64) (Guarantee, error) {
	if err := CheckDelta(delta); err != nil {
		return Guarantee{}, fmt.Errorf("accounting: %w", err)
	}
	eps, d, err := epsilonDelta(e)
	if err != nil {
		return Guarantee{}, err
	}
	if d > delta {
		return Guarantee{}, fmt.Errorf("accounting: the events spend δ = %g, more than the δ = %g asked for", d, delta)
	}
	return Guarantee{Epsilon: eps, Delta: delta, Accountant: "basic"}, nil
}

// pureEpsilon returns the ε of e if Basic proves e (ε, 0)-DP; ok is false if
// e has no pure guarantee Basic knows.
func pureEpsilon(e Event) (eps float64, ok bool, err error) {
	eps, d, err := epsilonDelta(e)
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return 0, false, nil
		}
		return 0, false, err
	}
	return eps, d == 0, nil
}

// epsilonDelta is the (ε, δ) of e under basic composition.
func epsilonDelta(e Event) (eps, delta float64, err error) {
	switch v := e.(type) {
	case Laplace:
		eps, err = v.epsilon()
		return eps, 0, err
	case EpsilonDelta:
		return v.Epsilon, v.Delta, v.check()
	case AboveThreshold:
		return float64(v.MaxIterations) * v.Epsilon, 0, v.check()
	case NonPrivate:
		return math.Inf(1), 0, nil
	case PoissonSampled:
		if !(v.SamplingRate >= 0 && v.SamplingRate <= 1) {
			return 0, 0, fmt.Errorf("accounting: sampling rate %v is outside [0, 1]", v.SamplingRate)
		}
		eps, delta, err = epsilonDelta(v.Event)
		if err != nil {
			return 0, 0, err
		}
		q := v.SamplingRate
		if q == 0 {
			return 0, 0, nil
		}
		return math.Log1p(q * math.Expm1(eps)), q * delta, nil
	case SelfComposed:
		if v.Count < 0 {
			return 0, 0, fmt.Errorf("accounting: composition count %d < 0", v.Count)
		}
		if v.Count == 0 {
			return 0, 0, nil
		}
		eps, delta, err = epsilonDelta(v.Event)
		return float64(v.Count) * eps, math.Min(1, float64(v.Count)*delta), err
	case Composed:
		for _, ev := range v.Events {
			e1, d1, err := epsilonDelta(ev)
			if err != nil {
				return 0, 0, err
			}
			eps += e1
			delta = math.Min(1, delta+d1)
		}
		return eps, delta, nil
	case WorstCase:
		if len(v.Events) == 0 {
			return 0, 0, errors.New("accounting: a worst case of no events")
		}
		for _, ev := range v.Events {
			e1, d1, err := epsilonDelta(ev)
			if err != nil {
				return 0, 0, err
			}
			eps, delta = math.Max(eps, e1), math.Max(delta, d1)
		}
		return eps, delta, nil
	case RepeatAndSelect:
		return repeatAndSelectPure(v.Event, v.Repetitions, 1, 1)
	case AdaptiveRepeatAndSelect:
		if err := v.check(); err != nil {
			return 0, 0, err
		}
		return repeatAndSelectPure(v.Event, v.Repetitions, v.MaxRatio, v.MinRatio)
	}
	return 0, 0, unsupported("basic", e)
}

// repeatAndSelectPure is DP-HyPO's Theorem 2: ((2+η)(ε + log(C/c)), 0).
func repeatAndSelectPure(base Event, rep Repetitions, maxRatio, minRatio float64) (float64, float64, error) {
	if err := rep.Check(); err != nil {
		return 0, 0, err
	}
	eps, delta, err := epsilonDelta(base)
	if err != nil {
		return 0, 0, err
	}
	if delta > 0 || rep.Distribution != TNB {
		return 0, 0, fmt.Errorf("accounting: the basic accountant counts repeat-and-select only of a pure-DP base with TNB repetitions, have δ = %g and %s: %w", delta, rep, ErrUnsupported)
	}
	return (2 + rep.Eta) * (eps + math.Log(maxRatio/minRatio)), 0, nil
}
