package audit

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// TunerCanary audits private tuning (e.g. Xiang et al., Algorithm 2, and
// DP-HyPO) on real DP-SGD runs in their ETCV setting with the score
// manipulation "first coordinate of w₀ − w_N": one of dptune's own tuners
// (Tuner, a tuning.Runner with its Options) runs K ∼ Repetitions
// trainings (grid search: one per candidate of TunerSpace), each a DPSGDCanary trial in the same world whose score is its
// own statistic, and releases the best; the adversary's statistic is the
// released score (−Inf when nothing is released). The candidates (a small
// grid of learning rates) do not change a canary run, so only the selection
// matters — which is what the audit tests.
type TunerCanary struct {
	Run         DPSGDCanary
	Repetitions accounting.Repetitions
	Tuner       tuning.Runner
	Options     tuning.Values
}

// TunerSpace is the space a TunerCanary tunes over: four learning rates,
// which a canary run does not read (grid search trains all four).
func TunerSpace() tuning.Space {
	return tuning.Space{Name: "audit", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1, 0.2, 0.4, 0.8}, Log: true}}}
}

// canaryTrainer is a tuning.Trainer whose every run is a canary trial.
type canaryTrainer struct {
	run DPSGDCanary
	b   int
}

func (t canaryTrainer) Event() accounting.Event {
	return dpsgd.PlannedEvent(t.run.Arch, dpsgd.Config{NoiseMultiplier: t.run.NoiseMultiplier, SamplingRate: t.run.SamplingRate, Steps: t.run.Steps})
}

func (t canaryTrainer) Train(ctx context.Context, _ tuning.Candidate, seed *uint64) (tuning.Run, error) {
	if seed == nil {
		return tuning.Run{}, fmt.Errorf("audit: canary runs are seeded")
	}
	s, err := t.run.Trial(ctx, t.b, randsrc.Seeded(*seed, "canary run"))
	return tuning.Run{Score: s}, err
}

// Trial plays the tuning once on X (b = 0) or X′ (b = 1).
func (p TunerCanary) Trial(ctx context.Context, b int, rng *rand.Rand) (float64, error) {
	seed := rng.Uint64()
	space := TunerSpace()
	if p.Tuner == nil {
		return 0, fmt.Errorf("audit: a tuner canary needs a tuner")
	}
	spec := tuning.Spec{Space: space, Repetitions: p.Repetitions, Seed: &seed, Options: p.Options}
	res, err := p.Tuner.Run(ctx, spec, canaryTrainer{p.Run, b}, nil)
	if err != nil {
		return 0, err
	}
	if res.Selected == nil {
		return math.Inf(-1), nil
	}
	return res.Score, nil
}

// The tuning games: dptune's own tuners over DPSGDCanary runs, registered
// as "tuner" (random-stop; on real data when the caller has some, Xiang et
// al.'s NTCV), tuning.GPName (DP-HyPO) and tuning.GridName. Each claims what `dptune tune`
// would charge, by the tuner's own Check and Event: random-stop and gp
// Papernot–Steinke's (DP-HyPO's Theorem 1) RDP bound of the runs ("rdp",
// for K ~ TNB or Poisson only), random-stop also Xiang et al.'s Algorithm 3
// with μ = τ√T/σ ("xiang-o", approximate; absent when that μ is above
// accounting.MaxGaussianSelectMu); grid the composition of its runs, by
// RDP and PLD (exact by PLD at τ = 1).
func init() {
	Register(Game{Name: "tuner", Rank: 2,
		Help: "random-stop tuning of such runs, score = the canary's sum;\nwith --dataset or --model, X is --size real training\n" +
			"examples and the canary sits on the network's first\nparameter (Xiang et al.'s NTCV)",
		Fields: append(slices.Clip(dpsgdFields), "Repetitions"),
		Data:   DataOptional, DPSGD: true, Bounds: dpsgdBounds,
		Check: checkCanary,
		New: func(s Settings) (Protocol, Claims, error) {
			return tunerGame(s, tuning.RandomStopName, nil, true)
		},
	})
	Register(Game{Name: tuning.GPName, Rank: 3,
		Help:   "DP-HyPO (GP) tuning of such runs (--repeat tnb)",
		Fields: append(slices.Clip(dpsgdFields), "Repetitions", "GPOptions"),
		DPSGD:  true, Bounds: dpsgdBounds,
		Check: checkCanary,
		New: func(s Settings) (Protocol, Claims, error) {
			return tunerGame(s, tuning.GPName, s.GPOptions.Values(), false)
		},
	})
	Register(Game{Name: tuning.GridName, Rank: 4,
		Help:   "grid search over such runs: all four candidates, the best\nreleased (no --repeat)",
		Fields: dpsgdFields,
		DPSGD:  true, Bounds: dpsgdBounds,
		Refuses: map[string]string{"Repetitions": "grid search trains every candidate once"},
		Check:   checkCanary,
		New: func(s Settings) (Protocol, Claims, error) {
			run, base, err := canaryRun(s)
			if err != nil {
				return nil, nil, err
			}
			// Every candidate once: K is the space's size, the runs
			// compose (tuning.GridEvent), exactly by PLD at τ = 1.
			tu, err := tuning.Lookup(tuning.GridName)
			if err != nil {
				return nil, nil, invalid(err)
			}
			spec := tuning.Spec{Repetitions: s.Repetitions, Validation: "public", Space: TunerSpace()}
			return TunerCanary{Run: run, Tuner: tu.(tuning.Runner)}, Claims{"rdp": tu.Event(base, spec), "pld": tu.Event(base, spec)}, nil
		},
	})
}

// tunerGame is the TunerCanary of the tuner called name with options over
// s's canary runs, and its claims (with xiang, also Algorithm 3's).
func tunerGame(s Settings, name string, options tuning.Values, xiang bool) (Protocol, Claims, error) {
	run, base, err := canaryRun(s)
	if err != nil {
		return nil, nil, err
	}
	if err := s.checkRepetitions(); err != nil {
		return nil, nil, err
	}
	tu, err := tuning.Lookup(name)
	if err != nil {
		return nil, nil, invalid(err)
	}
	spec := tuning.Spec{Repetitions: s.Repetitions, Validation: "public", Space: TunerSpace(), Options: options}
	if err := tu.Check(spec); err != nil {
		return nil, nil, invalid(err)
	}
	claims := Claims{}
	if d := s.Repetitions.Distribution; d == accounting.TNB || d == accounting.Poisson {
		claims["rdp"] = tu.Event(base, spec) // the proved bounds' domain
	}
	if xiang {
		x := spec
		x.Accountant = tuning.XiangO
		if e, ok := tu.Event(base, x).(accounting.GaussianSelect); ok && e.Mu <= accounting.MaxGaussianSelectMu {
			claims["xiang-o"] = e
		}
	}
	return TunerCanary{Run: run, Repetitions: s.Repetitions, Tuner: tu.(tuning.Runner), Options: spec.Options}, claims, nil
}
