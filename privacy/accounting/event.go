package accounting

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Event describes what a mechanism did with the private data. Events are
// immutable values; they serialise to JSON as an object whose "type" field
// names the event (see MarshalEvent and UnmarshalEvent).
type Event interface {
	// Type is the event's JSON type name, e.g. "gaussian".
	Type() string
}

// Gaussian is the Gaussian mechanism: a query of L2 sensitivity Sensitivity
// (in the query's units) released with N(0, (NoiseMultiplier·Sensitivity)²)
// noise per coordinate. NoiseMultiplier is σ/Δ, the noise standard
// deviation in units of the sensitivity — the meaning the field gives it
// (dp_accounting's GaussianDpEvent, Opacus, TF Privacy) — so the privacy
// depends on NoiseMultiplier alone; Sensitivity records the query's scale
// and must be positive. DP-SGD has Sensitivity 1: the clipping norm.
//
// Ledgers of version 1 stored the noise standard deviation in the query's
// units under "noise_multiplier"; UnmarshalLedger converts them.
type Gaussian struct {
	NoiseMultiplier float64 `json:"noise_multiplier"`
	Sensitivity     float64 `json:"sensitivity"`
}

// DiscreteGaussian is the discrete Gaussian mechanism: an integer query of
// sensitivity Sensitivity (an integer, e.g. 1 for a count under add/remove
// adjacency) released with noise from N_ℤ(0, (NoiseMultiplier·Sensitivity)²),
// P[x] ∝ exp(−x²/(2σ²)) on the integers. Canonne, Kamath & Steinke 2020
// ("The Discrete Gaussian for Differential Privacy", Theorem 4) show it is
// ½(Δ/σ)²-concentrated DP, i.e. (α, α·Δ²/(2σ²))-RDP at every order — the
// continuous Gaussian's RDP — so the RDP accountant counts it as such. Its
// integer output has no low bits to leak (no float is released with float
// noise added: Mironov 2012). The PLD and GDP accountants do not count it.
type DiscreteGaussian struct {
	NoiseMultiplier float64 `json:"noise_multiplier"`
	Sensitivity     float64 `json:"sensitivity"`
}

// Laplace is the Laplace mechanism: a query of L1 sensitivity Sensitivity
// released with Laplace noise of scale Scale (density exp(−|x|/Scale)/(2·Scale))
// per coordinate. It is (Sensitivity/Scale, 0)-DP.
type Laplace struct {
	Scale       float64 `json:"scale"`
	Sensitivity float64 `json:"sensitivity"`
}

// EpsilonDelta is a mechanism known only by its (ε, δ)-DP guarantee.
type EpsilonDelta struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// PoissonSampled runs Event on a Poisson sample of the data: each example is
// included independently with probability SamplingRate.
type PoissonSampled struct {
	SamplingRate float64 `json:"sampling_rate"`
	Event        Event   `json:"event"`
}

// SelfComposed runs Event Count times (adaptively) on the same data.
type SelfComposed struct {
	Event Event `json:"event"`
	Count int   `json:"count"`
}

// Composed runs each of Events (adaptively) on the same data.
type Composed struct {
	Events []Event `json:"events"`
}

// RepeatAndSelect is random-stop private selection: Event (one run of the
// base algorithm with a candidate drawn from a fixed distribution) is run K
// times with K drawn from Repetitions, and only the best run is released
// (Liu & Talwar 2019; Papernot & Steinke 2022, "Hyperparameter Tuning with
// Renyi Differential Privacy", Algorithm 2 of the Xiang et al. audit paper).
// K and the other runs must stay hidden.
type RepeatAndSelect struct {
	Event       Event       `json:"event"`
	Repetitions Repetitions `json:"repetitions"`
}

// AdaptiveRepeatAndSelect is DP-HyPO (Wang et al. 2023, Framework 1): as
// RepeatAndSelect, but each run's candidate is drawn from a density that may
// depend on earlier runs and is kept within [MinRatio, MaxRatio] times the
// prior (c and C in the paper). Repetitions must be a truncated negative
// binomial (the paper's Theorem 1).
type AdaptiveRepeatAndSelect struct {
	Event       Event       `json:"event"`
	Repetitions Repetitions `json:"repetitions"`
	MaxRatio    float64     `json:"max_ratio"` // C
	MinRatio    float64     `json:"min_ratio"` // c
}

// Vote is DP-Hype's noisy vote vector: every client votes for
// VotesPerClient candidates, and the sum of votes is released with total
// noise N(0, NoiseStddev²) per candidate, in votes. Under replace-one-client
// adjacency the vote vector has L2 sensitivity √(2ℓ), so Vote is the
// Gaussian mechanism with that sensitivity and noise multiplier
// NoiseStddev/√(2ℓ): (α, α·ℓ/σ²)-RDP (our reading of the DP-Hype paper,
// whose formulas were lost in extraction; see package federated). Ledgers of version 1 called NoiseStddev "noise_multiplier".
type Vote struct {
	NoiseStddev    float64 `json:"noise_stddev"`
	VotesPerClient int     `json:"votes_per_client"`
}

// AboveThreshold is the doubling tuner's search (Ding et al., Algorithm 1):
// at most MaxIterations iterations of AboveThreshold, each (Epsilon, 0)-DP.
// It is counted at the cap, whatever the realised number of iterations, so
// the guarantee holds unconditionally.
type AboveThreshold struct {
	Epsilon       float64 `json:"epsilon"`
	MaxIterations int     `json:"max_iterations"`
}

// WorstCase is any one of Events, whichever is chosen and however: e.g.
// DP-SGD runs whose candidates set different batch sizes, epochs or
// networks. It is counted as the worst of them at every order or parameter
// — the pointwise maximum of their RDP curves, of their ε and δ, of their
// GDP μ — a bound that holds for every choice, which is what each
// composition needs: a choice from public randomness is a mixture, whose
// Rényi divergence is at most the largest member's (quasi-convexity: van
// Erven & Harremoës 2014, "Rényi Divergence and Kullback-Leibler
// Divergence", Theorem 13); a choice adaptive to earlier outputs (DP-HyPO's
// sampler, the doubling tuner's search) is bounded per step by the same
// maximum (adaptive composition; DP-HyPO's Theorem 1 asks each base run to
// meet one RDP bound whatever its hyperparameters). The PLD accountant does
// not count it. Events must not be empty.
type WorstCase struct {
	Events []Event `json:"events"`
}

// NonPrivate is a mechanism with no privacy guarantee, e.g. training without
// noise. Every accountant reports ε = +∞ for it.
type NonPrivate struct {
	Reason string `json:"reason"`
}

func (Gaussian) Type() string                { return "gaussian" }
func (DiscreteGaussian) Type() string        { return "discrete_gaussian" }
func (Laplace) Type() string                 { return "laplace" }
func (EpsilonDelta) Type() string            { return "epsilon_delta" }
func (PoissonSampled) Type() string          { return "poisson_sampled" }
func (SelfComposed) Type() string            { return "self_composed" }
func (Composed) Type() string                { return "composed" }
func (RepeatAndSelect) Type() string         { return "repeat_and_select" }
func (AdaptiveRepeatAndSelect) Type() string { return "adaptive_repeat_and_select" }
func (Vote) Type() string                    { return "vote" }
func (AboveThreshold) Type() string          { return "above_threshold" }
func (NonPrivate) Type() string              { return "non_private" }
func (WorstCase) Type() string               { return "worst_case" }

// DPSGD is the event of steps DP-SGD steps with Poisson sampling rate q and
// noise multiplier σ (noise σ·C for clipping norm C, sensitivity C):
// SelfComposed{PoissonSampled{q, Gaussian{σ, 1}}, steps}.
func DPSGD(noiseMultiplier, samplingRate float64, steps int) Event {
	return SelfComposed{
		Event: PoissonSampled{SamplingRate: samplingRate, Event: Gaussian{NoiseMultiplier: noiseMultiplier, Sensitivity: 1}},
		Count: steps,
	}
}

// ratio returns the noise multiplier σ/Δ of a Gaussian event, or an error if
// it or the sensitivity is out of range.
func (g Gaussian) ratio() (float64, error) {
	if !(g.NoiseMultiplier >= 0) || !(g.Sensitivity > 0) || math.IsInf(g.Sensitivity, 1) {
		return 0, fmt.Errorf("accounting: Gaussian with noise multiplier %v and sensitivity %v: need σ/Δ ≥ 0 and 0 < Δ < ∞", g.NoiseMultiplier, g.Sensitivity)
	}
	return g.NoiseMultiplier, nil
}

// gaussian returns the continuous Gaussian whose RDP bounds d's (CKS 2020,
// Theorem 4), for the RDP accountant only.
func (d DiscreteGaussian) gaussian() (Gaussian, error) {
	if !(d.Sensitivity >= 1) || d.Sensitivity != math.Trunc(d.Sensitivity) {
		return Gaussian{}, fmt.Errorf("accounting: discrete Gaussian with sensitivity %v: need a positive integer", d.Sensitivity)
	}
	return Gaussian(d), nil
}

// epsilon returns the pure-DP ε = Δ/b of a Laplace event.
func (l Laplace) epsilon() (float64, error) {
	if !(l.Scale >= 0) || !(l.Sensitivity > 0) || math.IsInf(l.Sensitivity, 1) {
		return 0, fmt.Errorf("accounting: Laplace with scale %v and sensitivity %v: need b ≥ 0 and 0 < Δ < ∞", l.Scale, l.Sensitivity)
	}
	return l.Sensitivity / l.Scale, nil
}

func (e EpsilonDelta) check() error {
	if !(e.Epsilon >= 0) || !(e.Delta >= 0 && e.Delta <= 1) {
		return fmt.Errorf("accounting: (ε, δ) = (%v, %v) is not a DP guarantee", e.Epsilon, e.Delta)
	}
	return nil
}

// gaussian returns the Gaussian mechanism a Vote is.
func (v Vote) gaussian() (Gaussian, error) {
	if v.VotesPerClient < 1 {
		return Gaussian{}, fmt.Errorf("accounting: vote with %d votes per client", v.VotesPerClient)
	}
	d := math.Sqrt(2 * float64(v.VotesPerClient))
	return Gaussian{NoiseMultiplier: v.NoiseStddev / d, Sensitivity: d}, nil
}

func (a AboveThreshold) check() error {
	if !(a.Epsilon >= 0) || math.IsInf(a.Epsilon, 1) || a.MaxIterations < 0 {
		return fmt.Errorf("accounting: AboveThreshold with ε = %v per iteration and cap %d", a.Epsilon, a.MaxIterations)
	}
	return nil
}

func (a AdaptiveRepeatAndSelect) check() error {
	if !(a.MinRatio > 0) || !(a.MaxRatio >= a.MinRatio) || math.IsInf(a.MaxRatio, 1) {
		return fmt.Errorf("accounting: DP-HyPO density bounds need 0 < c ≤ C < ∞, have c = %v, C = %v", a.MinRatio, a.MaxRatio)
	}
	if a.Repetitions.Distribution != TNB {
		return fmt.Errorf("accounting: DP-HyPO's guarantee (Theorem 1) needs truncated negative binomial repetitions, have %q", a.Repetitions.Distribution)
	}
	return a.Repetitions.Check()
}

// MarshalEvent encodes e as JSON: the event's fields plus "type". Nested
// events are encoded the same way.
func MarshalEvent(e Event) ([]byte, error) {
	var fields any
	switch v := e.(type) {
	case Gaussian, DiscreteGaussian, DistributedDiscreteGaussian, Laplace, EpsilonDelta, Vote, AboveThreshold, NonPrivate, GaussianSelect:
		fields = v
	case PoissonSampled:
		inner, err := MarshalEvent(v.Event)
		if err != nil {
			return nil, err
		}
		fields = struct {
			SamplingRate float64         `json:"sampling_rate"`
			Event        json.RawMessage `json:"event"`
		}{v.SamplingRate, inner}
	case SelfComposed:
		inner, err := MarshalEvent(v.Event)
		if err != nil {
			return nil, err
		}
		fields = struct {
			Event json.RawMessage `json:"event"`
			Count int             `json:"count"`
		}{inner, v.Count}
	case RepeatAndSelect:
		inner, err := MarshalEvent(v.Event)
		if err != nil {
			return nil, err
		}
		fields = struct {
			Event       json.RawMessage `json:"event"`
			Repetitions Repetitions     `json:"repetitions"`
		}{inner, v.Repetitions}
	case AdaptiveRepeatAndSelect:
		inner, err := MarshalEvent(v.Event)
		if err != nil {
			return nil, err
		}
		fields = struct {
			Event       json.RawMessage `json:"event"`
			Repetitions Repetitions     `json:"repetitions"`
			MaxRatio    float64         `json:"max_ratio"`
			MinRatio    float64         `json:"min_ratio"`
		}{inner, v.Repetitions, v.MaxRatio, v.MinRatio}
	case Composed, WorstCase:
		events := v.(interface{ events() []Event }).events()
		list := make([]json.RawMessage, len(events))
		for i, ev := range events {
			b, err := MarshalEvent(ev)
			if err != nil {
				return nil, err
			}
			list[i] = b
		}
		fields = struct {
			Events []json.RawMessage `json:"events"`
		}{list}
	default:
		return nil, fmt.Errorf("accounting: cannot encode event %T", e)
	}
	b, err := json.Marshal(fields)
	if err != nil {
		return nil, err
	}
	// Prepend "type" to the object.
	head := fmt.Sprintf(`{"type":%q`, e.Type())
	if len(b) > 2 {
		head += ","
	}
	return append([]byte(head), b[1:]...), nil
}

// UnmarshalEvent decodes an event written by MarshalEvent (the current
// LedgerVersion). It returns an error for an unknown type or malformed
// fields.
func UnmarshalEvent(b []byte) (Event, error) { return unmarshalEvent(b, LedgerVersion) }

// unmarshalEvent decodes an event of a ledger of the given version. Version
// 1: a Gaussian's "noise_multiplier" is its noise standard deviation in the
// query's units (converted here to σ/Δ), a missing "sensitivity" is 1 (ledgers
// written before it existed), and a Vote's standard deviation is called
// "noise_multiplier".
func unmarshalEvent(b []byte, version int) (Event, error) {
	var head struct {
		Type   string            `json:"type"`
		Event  json.RawMessage   `json:"event"`
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("accounting: decoding event: %w", err)
	}
	inner := func() (Event, error) {
		if head.Event == nil {
			return nil, fmt.Errorf("accounting: %s event without an inner event", head.Type)
		}
		return unmarshalEvent(head.Event, version)
	}
	var out Event
	var err error
	switch head.Type {
	case "gaussian":
		e := Gaussian{Sensitivity: 1}
		err = json.Unmarshal(b, &e)
		if version == 1 && e.Sensitivity > 0 {
			e.NoiseMultiplier /= e.Sensitivity
		}
		out = e
	case "gaussian_select":
		out, err = decode[GaussianSelect](b)
	case "discrete_gaussian":
		out, err = decode[DiscreteGaussian](b)
	case "distributed_discrete_gaussian":
		out, err = decode[DistributedDiscreteGaussian](b)
	case "laplace":
		out, err = decode[Laplace](b)
	case "epsilon_delta":
		out, err = decode[EpsilonDelta](b)
	case "vote":
		var e Vote
		if version == 1 {
			var old struct {
				NoiseMultiplier float64 `json:"noise_multiplier"`
				VotesPerClient  int     `json:"votes_per_client"`
			}
			err = json.Unmarshal(b, &old)
			e = Vote{NoiseStddev: old.NoiseMultiplier, VotesPerClient: old.VotesPerClient}
		} else {
			err = json.Unmarshal(b, &e)
		}
		out = e
	case "above_threshold":
		out, err = decode[AboveThreshold](b)
	case "non_private":
		out, err = decode[NonPrivate](b)
	case "poisson_sampled":
		var e struct {
			SamplingRate float64 `json:"sampling_rate"`
		}
		if err = json.Unmarshal(b, &e); err == nil {
			var ev Event
			ev, err = inner()
			out = PoissonSampled{SamplingRate: e.SamplingRate, Event: ev}
		}
	case "self_composed":
		var e struct {
			Count int `json:"count"`
		}
		if err = json.Unmarshal(b, &e); err == nil {
			var ev Event
			ev, err = inner()
			out = SelfComposed{Event: ev, Count: e.Count}
		}
	case "repeat_and_select":
		var e struct {
			Repetitions Repetitions `json:"repetitions"`
		}
		if err = json.Unmarshal(b, &e); err == nil {
			var ev Event
			ev, err = inner()
			out = RepeatAndSelect{Event: ev, Repetitions: e.Repetitions}
		}
	case "adaptive_repeat_and_select":
		var e struct {
			Repetitions Repetitions `json:"repetitions"`
			MaxRatio    float64     `json:"max_ratio"`
			MinRatio    float64     `json:"min_ratio"`
		}
		if err = json.Unmarshal(b, &e); err == nil {
			var ev Event
			ev, err = inner()
			out = AdaptiveRepeatAndSelect{Event: ev, Repetitions: e.Repetitions, MaxRatio: e.MaxRatio, MinRatio: e.MinRatio}
		}
	case "composed", "worst_case":
		events := make([]Event, len(head.Events))
		for i, raw := range head.Events {
			if events[i], err = unmarshalEvent(raw, version); err != nil {
				break
			}
		}
		if head.Type == "composed" {
			out = Composed{Events: events}
		} else if len(events) == 0 {
			err = errors.New("a worst case of no events")
		} else {
			out = WorstCase{Events: events}
		}
	default:
		return nil, fmt.Errorf("accounting: unknown event type %q", head.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("accounting: decoding %s event: %w", head.Type, err)
	}
	return out, nil
}

func (c Composed) events() []Event  { return c.Events }
func (w WorstCase) events() []Event { return w.Events }

// decode reads a plain event (one without inner events) of type T.
func decode[T Event](b []byte) (Event, error) {
	var e T
	err := json.Unmarshal(b, &e)
	return e, err
}
