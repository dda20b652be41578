package job

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// defaultsOf returns the settings of the default candidate of s: s.Default,
// or else the network's settings on the dataset (NetworkDefaultsOn) — the
// published ones they were chosen around (TrainDefaults.Published) where
// dptune chose them on this data, which no candidate may depend on.
func (s TuneSpec) defaultsOf() (TrainDefaults, bool) {
	if s.Default != nil {
		return *s.Default, true
	}
	d, ok := NetworkDefaultsOn(s.Data.Arch.Spec, s.Data.Name)
	if ok && d.Published != nil && s.dataIndependent(d) != nil {
		return *d.Published, true
	}
	return d, ok
}

// dataIndependent refuses default settings d that dptune chose on the
// training data of the dataset s tunes (TrainDefaults.ChosenOn), or of a
// registered dataset when s tunes an image folder (which may hold that
// dataset's images): such a candidate depends on the private data, which
// no tuner's guarantee covers (each needs its candidates, and random-stop
// its prior, fixed before the data is read). Settings a third party
// published (ChosenOn "") are public, as the architecture is.
func (s TuneSpec) dataIndependent(d TrainDefaults) error {
	if d.ChosenOn == "" || d.ChosenOn != s.Data.Name && !IsFolderDatasetName(s.Data.Name) {
		return nil
	}
	on := s.Data.Name
	if on != d.ChosenOn {
		on += " (an image folder, which may hold " + d.ChosenOn + "'s images)"
	}
	return invalidf("the default among the candidates: %s's built-in settings were chosen by dptune on %s's training data, not published by a third party, so as a candidate in a tuning of %s they would depend on the private data that no guarantee accounts for; give --default-settings chosen elsewhere (e.g. Tramèr & Boneh's published ones) with --default-source",
		s.Data.Arch.Spec.Name, d.ChosenOn, on)
}

// defaultCandidate checks the default-as-candidate settings of s and
// returns its candidate (nil without IncludeDefault) and the weight the
// tuner gets: random-stop's prior weight (tuning.DefaultWeight when s
// gives none), 0 for a tuner that trains every candidate.
func (s TuneSpec) defaultCandidate(uses tuning.Uses) (*tuning.Candidate, float64, error) {
	if !s.IncludeDefault {
		if s.Default != nil || s.DefaultWeight != 0 {
			return nil, 0, invalidf("default settings and their weight need the default among the candidates (IncludeDefault)")
		}
		return nil, 0, nil
	}
	d, ok := s.defaultsOf()
	if !ok {
		if tu, err := tuning.Lookup(s.Tuner); err == nil {
			if _, preset := tu.(tuning.Presetter); preset {
				return nil, 0, invalidf("the %s tuner needs default settings among its candidates: %s has no published settings on %s; give them, or tune with a tuner that needs none", s.Tuner, s.Data.Arch.Spec.Name, s.Data.Name)
			}
		}
		return nil, 0, invalidf("the default among the candidates needs default settings: %s has no published settings on %s; give them", s.Data.Arch.Spec.Name, s.Data.Name)
	}
	if uses.Default {
		// (A tuner that takes no default is refused with its own reason,
		// tuning.CheckDefault.)
		if err := s.dataIndependent(d); err != nil {
			return nil, 0, err
		}
	}
	settings := map[string]float64{tuning.LearningRate: d.LearningRate, tuning.ClipNorm: d.ClipNorm,
		tuning.Momentum: d.Momentum, tuning.BatchSize: float64(d.BatchSize), tuning.Epochs: float64(d.Epochs)}
	if s.Clipping == dpsgd.AutomaticClipping {
		// No clipping norm: the default's η at C stands as η·C.
		settings[tuning.LearningRate] = autoClipLearningRate(d.LearningRate, d.ClipNorm)
		delete(settings, tuning.ClipNorm)
	}
	c, err := tuning.DefaultCandidate(s.Space, settings)
	if err != nil {
		return nil, 0, invalid(err)
	}
	w := s.DefaultWeight
	if w == 0 && uses.Repetitions {
		w = tuning.DefaultWeight
	}
	return &c, w, nil
}

// defaultShapeDiffers reports whether t's default candidate (if any) runs
// at another sampling rate, number of steps or network than the space's
// runs: every run is then counted as the costliest (tuning.Hyper.Event).
func defaultShapeDiffers(t *tuning.DPSGDTrainer) bool {
	if t.Default == nil {
		return false
	}
	h := t.Hyper()
	with, err1 := h.Event(t.Space, 1)
	h.Default = nil
	without, err2 := h.Event(t.Space, 1)
	if err1 != nil || err2 != nil {
		return true
	}
	a, err1 := accounting.MarshalEvent(with)
	b, err2 := accounting.MarshalEvent(without)
	return err1 != nil || err2 != nil || string(a) != string(b)
}

// checkShare refuses a selection share outside (0, 1) (0: none).
func (s TuneSpec) checkShare() error {
	if s.SelectionShare != 0 && !(s.SelectionShare > 0 && s.SelectionShare < 1) {
		return invalidf("selection share %v is outside (0, 1)", s.SelectionShare)
	}
	return nil
}

// finalHyper is the final run of a tuning with a selection share: the
// selected candidate trained once on the whole training set (the nominal
// size s.Data.NominalN, validation split included), every setting it
// leaves out the tuning's own, as sel's (the selection's runs).
func (s TuneSpec) finalHyper(sel tuning.Hyper) (tuning.Hyper, error) {
	n := s.Data.NominalN
	q := float64(s.BatchSize) / float64(n)
	if err := dpsgd.CheckEpochs(s.Epochs, q); err != nil {
		return tuning.Hyper{}, invalidf("the final run: epochs %d: %v", s.Epochs, err)
	}
	h := sel
	h.NominalN = n
	h.Config.SamplingRate, h.Config.ExpectedBatchSize, h.Config.Steps = q, float64(s.BatchSize), dpsgd.StepsForEpochs(s.Epochs, q)
	if err := h.CheckRuns(s.Space); err != nil {
		return tuning.Hyper{}, invalid(err)
	}
	return h, nil
}

// finalEvent is the final run's event at noise multiplier sigma: any
// candidate's run (the space's or the default), counted as the costliest
// when they differ, since which one it trains is the selection's outcome.
func finalEvent(h tuning.Hyper, space tuning.Space, sigma float64) accounting.Event {
	e, err := h.Event(space, sigma)
	if err != nil {
		return accounting.NonPrivate{Reason: err.Error()}
	}
	return e
}

// finalLabel labels the final run's planned event in a ledger.
const finalLabel = "final DP-SGD run of the selected hyperparameters on the whole training set"

// calibrateSplit calibrates a tuning with a selection share s.SelectionShare
// = sh: the final run's σ_f so that the final run alone meets
// ε_f = (1 − sh)·ε at δ, then the selection's base σ so that the RDP
// composition of the selection (the tuner's event of base(σ)) and the
// final run at σ_f meets the total (ε, δ). Both are before any data is
// read; an infeasible share is an error wrapping ErrInvalid that names it.
// A tuning's one data normalisation norm (nil: none) counts with the
// final run alone, which uses it as a run estimating its own would (so
// σ_f is as without sharing), and once in the total.
func (s TuneSpec) calibrateSplit(ctx context.Context, tu tuning.Tuner, spec tuning.Spec, norm accounting.Event, base func(float64) accounting.Event, final tuning.Hyper) (sel, fin float64, err error) {
	sh := s.SelectionShare
	withNorm := func(es ...accounting.Event) accounting.Event {
		if norm != nil {
			es = append([]accounting.Event{norm}, es...)
		}
		if len(es) == 1 {
			return es[0]
		}
		return accounting.Composed{Events: es}
	}
	fin, err = accounting.CalibrateNoise(ctx, accounting.RDP{}, func(z float64) accounting.Event { return withNorm(finalEvent(final, s.Space, z)) }, (1-sh)*s.Epsilon, s.Delta)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return 0, 0, err
		}
		return 0, 0, invalidWrapf(err, "selection share %g: the final run's ε = (1 − %g)·%g = %g at δ = %g is too small: %v", sh, sh, s.Epsilon, (1-sh)*s.Epsilon, s.Delta, err)
	}
	fe := finalEvent(final, s.Space, fin)
	sel, err = accounting.CalibrateNoise(ctx, tu.Accountant(spec), func(z float64) accounting.Event {
		return withNorm(tuning.SubsampledSelection(s.Subsample, tu.Event(base(z), spec)), fe)
	}, s.Epsilon, s.Delta)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return 0, 0, err
		}
		return 0, 0, invalidWrapf(err, "selection share %g: no noise multiplier of the selection's runs fits its share of ε = %g at δ = %g beside the final run: %v", sh, s.Epsilon, s.Delta, err)
	}
	return sel, fin, nil
}

// withPreset is s with the settings a preset tuner (tuning.Presetter, the
// recommended tuner) fixes filled in: the default among the candidates, its
// weight, the selection share, the tuning subset, the distribution of K and
// the private validation's size and noise. A setting s gives that differs
// from the preset's is refused (ErrInvalid), naming it; any other tuner's
// s is returned as it is.
func (s TuneSpec) withPreset() (TuneSpec, error) {
	tu, err := tuning.Lookup(s.Tuner)
	if err != nil {
		return s, nil // plan refuses it
	}
	pr, ok := tu.(tuning.Presetter)
	if !ok {
		return s, nil
	}
	p := pr.Preset()
	fill := func(name string, have *float64, want float64) error {
		if *have != 0 && *have != want {
			return invalidf("the %s tuner fixes its %s at %g: leave it unset (have %g)", s.Tuner, name, want, *have)
		}
		*have = want
		return nil
	}
	valSize, rep := float64(s.ValSize), s.Repetitions
	for _, f := range []struct {
		name string
		have *float64
		want float64
	}{{"default weight", &s.DefaultWeight, p.DefaultWeight}, {"selection share", &s.SelectionShare, p.SelectionShare},
		{"subsample ratio", &s.Subsample, p.Subsample}, {"validation size", &valSize, math.Round(p.ValFraction * float64(s.Data.NominalN))}, {"score noise", &s.ScoreNoise, p.ScoreNoise}} {
		if err := fill(f.name, f.have, f.want); err != nil {
			return s, err
		}
	}
	if rep != (accounting.Repetitions{}) && rep != p.Repetitions {
		return s, invalidf("the %s tuner fixes its number of runs at %s: leave it unset (have %s)", s.Tuner, p.Repetitions, rep)
	}
	if s.Validation != "" && s.Validation != "private" {
		return s, invalidf("the %s tuner scores on a private validation split inside its tuning subset: validation %q", s.Tuner, s.Validation)
	}
	s.ValSize, s.Repetitions, s.Validation, s.IncludeDefault = int(valSize), p.Repetitions, "private", true
	return s, nil
}

// selectionLedger is a selection's ledger l as it counts: amplified once
// as a whole when the selection ran on a tuning subset
// (tuning.SubsampledLedger), else l.
func (s TuneSpec) selectionLedger(l accounting.Ledger) accounting.Ledger {
	if s.Subsample == 0 || len(l.Entries) == 0 {
		return l
	}
	label := fmt.Sprintf("selection on a Poisson tuning subset of ratio %g, amplified as one mechanism (Koskela & Kulkarni 2023; Zhu & Wang 2019, Theorem 6): %s", s.Subsample, l.Entries[0].Label)
	return tuning.SubsampledLedger(s.Subsample, label, l)
}

// trainFinal trains the final run of the selected candidate c on the whole
// training set train at h's σ (h.Config.NoiseMultiplier), its randomness
// from seed or key (stream "final run"), and adds its cost to l: the
// planned event when the candidates' runs differ (counted as the
// costliest) or when the run did not finish (interrupted or failed), else
// its data normalisation and its steps as they ran. It
// also returns the event of the run's data normalisation (nil for a
// network without a datanorm layer).
func trainFinal(ctx context.Context, h tuning.Hyper, space tuning.Space, c tuning.Candidate, train *data.Dataset, seed *uint64, key *randsrc.Key, mode dpsgd.NoiseMode, l *accounting.Ledger) (*model.Net, accounting.Event, error) {
	arch, cfg, err := h.Run(c)
	if err != nil {
		return nil, nil, err
	}
	norm := dpsgd.StagesEvent(arch, cfg)
	worst, err := h.Event(space, h.Config.NoiseMultiplier)
	if err != nil {
		return nil, norm, err
	}
	cfg.NoiseMultiplier, cfg.Noise = h.Config.NoiseMultiplier, mode
	initRNG := randsrc.Crypto()
	switch {
	case key != nil:
		cfg.Key = key.Derive("final run")
		initRNG = cfg.Key.Stream("init")
	case seed != nil:
		v := randsrc.Seeded(*seed, "final run").Uint64()
		cfg.Seed = &v
		initRNG = randsrc.New(&v, "init")
	}
	net, err := model.New(arch, initRNG)
	if err != nil {
		return nil, norm, err
	}
	res, err := dpsgd.Train(ctx, net, train, cfg, nil, nil)
	_, costliest := worst.(accounting.WorstCase)
	switch {
	case costliest:
		l.Add(finalLabel+", counted as the costliest candidate's (with its data normalisation, if any)", worst)
	case err != nil:
		// Interrupted (when to stop may have followed what the curator
		// saw) or failed (a divergence's step depends on the noisy
		// iterates): the whole planned run is counted, as the budget file
		// charges it and as `dptune train` records a run stopped early —
		// never ε at the steps it happened to complete.
		for _, e := range dpsgd.PlannedStages(arch, cfg).Entries {
			l.Add("final run's "+e.Label, e.Event)
		}
		l.Add(finalLabel+" (planned: it did not finish, and counts whole)", dpsgd.StepsEvent(cfg))
	default:
		for _, e := range res.Stages.Entries {
			l.Add("final run's "+e.Label, e.Event)
		}
		if res.Event != nil {
			l.Add(finalLabel, res.Event)
		}
	}
	if err != nil {
		return nil, norm, err
	}
	return net, norm, nil
}

// epsilonComponents is report.json's EpsilonComponents of a tuning's
// ledger l: its first entry is the selection, after the tuning's one data
// normalisation when shared; with a selection share (split) the rest is
// the final run, and norm (if not nil) the final run's own data
// normalisation.
func epsilonComponents(l accounting.Ledger, split bool, norm accounting.Event, shared bool, acc accounting.Accountant, delta float64) []tuning.EpsilonComponent {
	if shared {
		return tuning.SharedEpsilonComponents(l, 1, split, acc, delta)
	}
	return tuning.EpsilonComponents(l, 1, split, norm, acc, delta)
}

// withNorm is ledger l after norm's entries (a tuning's one data
// normalisation; none: l itself).
func withNorm(norm, l accounting.Ledger) accounting.Ledger {
	if len(norm.Entries) == 0 {
		return l
	}
	return accounting.Ledger{Entries: append(slices.Clone(norm.Entries), l.Entries...)}
}

// estimateNorm estimates t's shared data normalisation (t.Norm) once on
// train, the whole training set, at the nominal size s.Data.NominalN, its
// noise from the invocation's seed or key (purpose "data normalisation")
// drawn as the runs draw theirs (t.Noise): dpsgd.EstimateDataNorm on a
// network of the tuning with that datanorm layer.
func (s TuneSpec) estimateNorm(ctx context.Context, t *tuning.DPSGDTrainer, train *data.Dataset, seed *uint64, key *randsrc.Key) (*dpsgd.DataNormEstimate, error) {
	arch, ok := t.Arch, t.Norm.Covers(t.Arch)
	for _, name := range slices.Sorted(maps.Keys(t.Networks)) {
		if !ok && t.Norm.Covers(t.Networks[name]) {
			arch, ok = t.Networks[name], true
		}
	}
	if !ok {
		return nil, fmt.Errorf("job: no network of the tuning has the shared data normalisation %+v", t.Norm.Mechanism)
	}
	var nseed *uint64
	var nkey *randsrc.Key
	switch {
	case key != nil:
		nkey = key.Derive("data normalisation")
	case seed != nil:
		v := randsrc.Seeded(*seed, "data normalisation").Uint64()
		nseed = &v
	}
	return dpsgd.EstimateDataNorm(ctx, arch, train, t.Norm.Mechanism, float64(s.Data.NominalN), nseed, nkey, t.Noise.Secure(nseed))
}
