package accounting

import (
	"encoding/json"
	"fmt"
)

// Event describes what a mechanism did with the private data. Events are
// immutable values; they serialise to JSON as an object whose "type" field
// names the event (see MarshalEvent and UnmarshalEvent).
type Event interface {
	// Type is the event's JSON type name, e.g. "gaussian".
	Type() string
}

// Gaussian is the Gaussian mechanism: a query of L2 sensitivity Δ released
// with N(0, (σΔ)²) noise per coordinate, where σ is the noise multiplier.
type Gaussian struct {
	NoiseMultiplier float64 `json:"noise_multiplier"`
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

// NonPrivate is a mechanism with no privacy guarantee, e.g. training without
// noise. Every accountant reports ε = +∞ for it.
type NonPrivate struct {
	Reason string `json:"reason"`
}

func (Gaussian) Type() string       { return "gaussian" }
func (PoissonSampled) Type() string { return "poisson_sampled" }
func (SelfComposed) Type() string   { return "self_composed" }
func (Composed) Type() string       { return "composed" }
func (NonPrivate) Type() string     { return "non_private" }

// DPSGD is the event of steps DP-SGD steps with Poisson sampling rate q and
// noise multiplier σ: SelfComposed{PoissonSampled{q, Gaussian{σ}}, steps}.
func DPSGD(noiseMultiplier, samplingRate float64, steps int) Event {
	return SelfComposed{Event: PoissonSampled{SamplingRate: samplingRate, Event: Gaussian{NoiseMultiplier: noiseMultiplier}}, Count: steps}
}

// MarshalEvent encodes e as JSON: the event's fields plus "type".
func MarshalEvent(e Event) ([]byte, error) {
	var fields any
	switch v := e.(type) {
	case Gaussian, NonPrivate:
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
	case Composed:
		list := make([]json.RawMessage, len(v.Events))
		for i, ev := range v.Events {
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

// UnmarshalEvent decodes an event written by MarshalEvent. It returns an
// error for an unknown type or malformed fields.
func UnmarshalEvent(b []byte) (Event, error) {
	var head struct {
		Type   string            `json:"type"`
		Event  json.RawMessage   `json:"event"`
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("accounting: decoding event: %w", err)
	}
	switch head.Type {
	case "gaussian":
		var e Gaussian
		return e, json.Unmarshal(b, &e)
	case "non_private":
		var e NonPrivate
		return e, json.Unmarshal(b, &e)
	case "poisson_sampled":
		var e struct {
			SamplingRate float64 `json:"sampling_rate"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, err
		}
		inner, err := UnmarshalEvent(head.Event)
		return PoissonSampled{SamplingRate: e.SamplingRate, Event: inner}, err
	case "self_composed":
		var e struct {
			Count int `json:"count"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, err
		}
		inner, err := UnmarshalEvent(head.Event)
		return SelfComposed{Event: inner, Count: e.Count}, err
	case "composed":
		out := Composed{Events: make([]Event, len(head.Events))}
		for i, raw := range head.Events {
			ev, err := UnmarshalEvent(raw)
			if err != nil {
				return nil, err
			}
			out.Events[i] = ev
		}
		return out, nil
	}
	return nil, fmt.Errorf("accounting: unknown event type %q", head.Type)
}
