package job

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dptune/dptune/audit"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/internal/registry"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// AuditRequest is an audit as a person asks for it (the flags of dptune
// audit, by whose names Given and the errors speak): Spec checks it
// against its protocol's registration (audit.Game) and makes the
// AuditSpec.
type AuditRequest struct {
	Protocol          string
	Trials            int
	Seed              uint64
	Delta, Confidence float64
	// Mu is the reduced game's shift (--gdp-mu).
	Mu float64
	// The DP-SGD games' run: NoiseMultiplier, or BaseEpsilon to calibrate
	// it; SamplingRate, ClipNorm, Steps, Size; Observe the adversary's
	// view where the game lets it be chosen.
	NoiseMultiplier, BaseEpsilon, SamplingRate, ClipNorm float64
	Steps, Size                                          int
	Observe                                              string
	ScoreNoise                                           float64
	// Repeat is the tuner games' number of runs.
	Repeat RepeatSettings
	// The above-threshold game's search: Partitions k, Epsilon0,
	// Granularity, U0, MaxIterations (0: tuning.DefaultMaxIterations).
	Partitions, MaxIterations int
	Epsilon0, Granularity, U0 float64
	Dataset, DataDir, Model   string // the games on data: the data and network
	LearningRate              float64
	// Out holds audit.json, audit.png and trials.csv.
	Out string
	// Given are the settings given explicitly, by flag name.
	Given Given
}

// auditFieldFlags are the settings an AuditRequest refuses by flag
// name when its protocol refuses their AuditSpec field (audit.Game's
// Refuses), by the field's name.
var auditFieldFlags = map[string]string{"Repetitions": "repeat"}

// Spec checks r and returns its AuditSpec, the trials streamed to
// Out/trials.csv. A request is refused, before any trial, with an error
// wrapping ErrInvalid that names the flag at fault: trials, confidence or
// size out of range, data or network settings for a protocol that trains
// no network of yours, a view the protocol does not offer, a parameter
// outside its protocol's bounds (audit.Bound), a setting the protocol
// refuses, a number of runs missing or above MaxRuns.
func (r AuditRequest) Spec() (AuditSpec, error) {
	g, _ := audit.Lookup(r.Protocol) // none for an unknown name, which Audit refuses
	onData, observe, err := r.check(g)
	if err != nil {
		return AuditSpec{}, err
	}
	spec := AuditSpec{Protocol: r.Protocol, Trials: r.Trials, Seed: r.Seed, Delta: r.Delta, Confidence: r.Confidence,
		Mu: r.Mu, NoiseMultiplier: r.NoiseMultiplier, BaseEpsilon: r.BaseEpsilon, SamplingRate: r.SamplingRate,
		ClipNorm: r.ClipNorm, Steps: r.Steps, Size: r.Size, ScoreNoise: r.ScoreNoise, Observe: observe,
		CSV: filepath.Join(r.Out, "trials.csv")}
	if onData {
		src, err := Dataset(r.Dataset, r.DataDir)
		if err == nil && r.Model != "" {
			var spec model.Spec
			if spec, err = model.LoadSpec(r.Model); err != nil {
				err = invalid(err)
			} else {
				src, err = src.WithModel(spec)
			}
		}
		if err != nil {
			return AuditSpec{}, err
		}
		spec.Data = src
		if g.Uses("LearningRate") {
			spec.LearningRate = r.LearningRate
		}
	}
	for field, why := range g.Refuses {
		if flag := auditFieldFlags[field]; flag != "" && r.Given[flag] {
			return AuditSpec{}, invalidf("--%s does not apply to audit %s: %s", flag, r.Protocol, why)
		}
	}
	if g.Uses("GPOptions") {
		spec.GPOptions = tuning.DefaultGPOptions()
	}
	if g.Uses("Repetitions") {
		rep, err := r.Repeat.Repetitions(r.Given)
		if err != nil {
			return AuditSpec{}, err
		}
		if rep == nil {
			return AuditSpec{}, invalidf("audit %s needs --repeat tnb|poisson|binary|fixed", r.Protocol)
		}
		if rep.L > tuning.MaxRuns {
			flag := "--runs"
			if rep.Distribution == accounting.Binary {
				flag = "--binary-l"
			}
			return AuditSpec{}, invalidf("%s %d is above %d, the most runs a tuning plays", flag, rep.L, tuning.MaxRuns)
		}
		spec.Repetitions = *rep
	}
	if g.Uses("AboveThreshold") {
		iters := r.MaxIterations
		if iters == 0 {
			iters = tuning.DefaultMaxIterations(r.U0, r.Granularity)
		}
		d := &spec.AboveThreshold
		d.Partitions, d.Epsilon0, d.Granularity, d.U0, d.MaxIterations = r.Partitions, r.Epsilon0, r.Granularity, r.U0, iters
	}
	return spec, nil
}

// check refuses, before any work, settings that protocol g cannot play
// with, and returns whether it trains on data and what its adversary
// observes.
func (r AuditRequest) check(g audit.Game) (onData bool, observe string, err error) {
	switch {
	case r.Trials < MinAuditTrials || r.Trials > audit.MaxTrials:
		return false, "", invalidf("--trials %d is outside [%d, %d]", r.Trials, MinAuditTrials, audit.MaxTrials)
	case !(r.Confidence > 0 && r.Confidence < 1):
		return false, "", invalidf("--confidence %v is outside (0, 1)", r.Confidence)
	case r.Size < 1:
		return false, "", invalidf("--size %d must be at least 1", r.Size)
	}
	// Only some audits train a network on data: the others have none to
	// choose (dpsgd and gp play a Dirac gradient canary on a fixed network,
	// whatever the network setting would say).
	onData = g.OnData(false)
	for _, name := range []string{"model", "dataset", "data-dir", "lr"} {
		switch {
		case !r.Given[name]:
		case name == "lr" && g.Uses("LearningRate"):
		case name != "lr" && g.TakesData():
			onData = true
		default:
			return false, "", invalidf("--%s applies to audit %s only: the %s audit trains no network of yours on data", name, auditDataProtocols(), r.Protocol)
		}
	}
	switch {
	case len(g.Views) > 0 && !slices.Contains(g.Views, r.Observe):
		return false, "", invalidf("--observe %q is neither %s", r.Observe, strings.Join(g.Views, " nor "))
	case len(g.Views) > 0:
		observe = r.Observe
	case r.Given["observe"]:
		return false, "", invalidf("--observe applies to audit %s only", audit.Either(hasViews))
	}
	// The protocol's own ranges (its registration's bounds), checked here
	// so that the message names the flag; out of them a trial used to fail
	// after the audit started.
	for _, b := range g.Bounds {
		v, err := r.real(b.Flag)
		if err != nil {
			return false, "", err
		}
		if err := b.Check("--"+b.Flag, v); err != nil {
			return false, "", invalid(err)
		}
	}
	return onData, observe, nil
}

// real is the real setting of r called flag (an audit.Bound's Flag).
func (r AuditRequest) real(flag string) (float64, error) {
	for _, s := range []struct {
		flag string
		v    float64
	}{{"delta", r.Delta}, {"confidence", r.Confidence}, {"gdp-mu", r.Mu}, {"noise-multiplier", r.NoiseMultiplier},
		{"base-epsilon", r.BaseEpsilon}, {"sampling-rate", r.SamplingRate}, {"clip-norm", r.ClipNorm}, {"score-noise", r.ScoreNoise},
		{"epsilon0", r.Epsilon0}, {"granularity", r.Granularity}, {"u0", r.U0}, {"lr", r.LearningRate}} {
		if s.flag == flag {
			return s.v, nil
		}
	}
	return 0, fmt.Errorf("audit: no real setting --%s", flag)
}

// auditDataProtocols names the audit protocols that train on data of the
// user's, for help and errors: "natural (and, but for --lr, tuner)".
func auditDataProtocols() string {
	var all, noLR []string
	for _, g := range audit.Games(nil) {
		switch {
		case g.TakesData() && g.Uses("LearningRate"):
			all = append(all, g.Name)
		case g.TakesData():
			noLR = append(noLR, g.Name)
		}
	}
	if len(noLR) == 0 {
		return registry.Either(all)
	}
	return fmt.Sprintf("%s (and, but for --lr, %s)", registry.Either(all), registry.Either(noLR))
}

// Save writes r as dir/audit.json, through a temporary file of a random
// name renamed into place (a symbolic link planted in dir is replaced, not
// written through).
func (r *AuditResult) Save(dir string) error { return saveAuditJSON(dir, r) }

// Save writes r as dir/audit.json, as AuditResult.Save does.
func (r *OneRunResult) Save(dir string) error { return saveAuditJSON(dir, r) }

// saveAuditJSON writes v, indented, as dir/audit.json atomically.
func saveAuditJSON(dir string, v any) error {
	js, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return fsx.WriteFileAtomic(filepath.Join(dir, "audit.json"), append(js, '\n'), 0o644)
}

// CheckRequest refuses, before the audited run's settings are read, canary
// settings that cannot make a one-run audit, with errors wrapping
// ErrInvalid that name the flags of dptune audit one-run: a confidence
// outside (0, 1), fewer than 2 canaries, an unknown canary kind, a
// non-private run (nonPrivate), a guess count outside [1, Canaries], more
// canaries than the test set of the dataset called dataset holds (the
// canaries are drawn from it).
func (s OneRunSpec) CheckRequest(dataset string, nonPrivate bool) error {
	if !(s.Confidence > 0 && s.Confidence < 1) {
		return invalidf("--confidence %v is outside (0, 1)", s.Confidence)
	}
	if s.Canaries < 2 {
		return invalidf("--canaries %d: a one-run audit needs at least 2", s.Canaries)
	}
	if s.Canary != OneRunGradient && s.Canary != OneRunInput {
		return invalidf("--canary %q is neither %s nor %s", s.Canary, OneRunGradient, OneRunInput)
	}
	if nonPrivate {
		return invalidf("--non-private: a one-run audit audits a private run")
	}
	for _, r := range s.Guesses {
		if r < 1 || r > s.Canaries {
			return invalidf("--guesses %d is outside [1, %d] (the canaries)", r, s.Canaries)
		}
	}
	if n, ok := TestSize(dataset); ok && s.Canaries > n {
		return invalidf("--canaries %d is above %d, the size of %s's test set the canaries are drawn from", s.Canaries, n, dataset)
	}
	return nil
}
