package tuning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
)

// ErrInvalid is wrapped by every error a Tuner's Check returns: the request
// is refused before any work.
var ErrInvalid = errors.New("invalid tuning request")

// invalidError is err, refused: it wraps ErrInvalid and err, with err's
// message.
type invalidError struct{ error }

func (e invalidError) Unwrap() []error { return []error{ErrInvalid, e.error} }

func invalidf(format string, a ...any) error { return invalidError{fmt.Errorf(format, a...)} }

// invalid marks err as a refused request, keeping its message and chain.
func invalid(err error) error { return invalidError{err} }

// Tuner is one private hyperparameter tuning algorithm around a base
// training algorithm (a Trainer). It owns its privacy plan: the whole
// tuning's ledger event for one run's event, known before any data is read,
// so that the caller calibrates the base run's noise with one generic call,
//
//	accounting.CalibrateNoise(ctx, tu.Accountant(spec),
//		func(σ float64) accounting.Event { return tu.Event(base(σ), spec) }, ε, δ)
//
// and charges a budget before the tuning starts. A Tuner is stateless: its
// settings travel in the Spec. Each tuner registers itself (Register) from
// its own file. It runs either as a Runner (around a Trainer of whole
// training runs) or as a Partitioned tuner (on disjoint parts of the data,
// which its caller cuts).
type Tuner interface {
	// Name is the tuner's name, unique in the registry: --tuner's value.
	Name() string
	// Summary is one line for help text.
	Summary() string
	// Options describes the tuner's own settings (Spec.Options), beyond
	// the common ones: OptionsOf its options struct, nil for none.
	Options() []Option
	// Uses says which common settings the tuner reads.
	Uses() Uses
	// Check refuses a spec the tuner cannot run, from public, nominal facts
	// only, before any data is read. Its error wraps ErrInvalid.
	Check(spec Spec) error
	// Accountant is the accountant that counts Event under spec.Accountant.
	Accountant(spec Spec) accounting.Accountant
	// Event is the whole tuning's ledger event when each base run's event
	// is base. For a checked spec it is what the ledger will hold.
	Event(base accounting.Event, spec Spec) accounting.Event
	// Label describes Event in a ledger.
	Label(spec Spec) string
}

// Runner is a tuner around a Trainer of whole training runs.
type Runner interface {
	Tuner
	// Run tunes: t trains candidates (r, if not nil, runs them as
	// spec.Jobs' jobs) and the result holds only what the tuner releases.
	// The ledger is charged whatever happens once a run has touched data.
	Run(ctx context.Context, spec Spec, t Trainer, r runner.Runner) (Result, error)
}

// Partitioned is a tuner that scores candidates on Partitions(spec)
// disjoint parts of the training data, cut by its caller with a keyed hash
// (so that one example changes one part only), then trains a final run.
type Partitioned interface {
	Tuner
	Partitions(spec Spec) int
	// Plan is the tuning of spec before its data is read, its final run
	// as final makes it (Hyper.Run) at noise multiplier sigma (calibrated
	// with Event).
	Plan(spec Spec, final Hyper, sigma float64) PartitionedPlan
}

// PartitionedPlan is a partitioned tuning before its data is read.
type PartitionedPlan interface {
	// Worst is the whole tuning's ledger at its caps: the budget charge.
	Worst() accounting.Ledger
	// Notes are curator-side warnings about the settings.
	Notes() []string
	// Scorer is the part runs' scorer: its caller gives it the parts, the
	// validation split, their keys, a runner and the cache directory.
	Scorer() *PartitionScorer
	// Run scores the candidates, selects one and trains the final run on
	// fit, its randomness from seed or key (see DoublingTuner). The ledger
	// is charged whatever happens.
	Run(ctx context.Context, fit *data.Dataset, seed *uint64, key *randsrc.Key, noise dpsgd.NoiseMode) (PartitionedResult, error)
}

// PartitionedResult is a partitioned tuning's release and its report.
type PartitionedResult struct {
	Result
	// Report is report.json given its caller's facts.
	Report func(ReportFacts) any
}

// ReportFacts are what a tuner's caller knows for its report: the data,
// what the ledger spent, the selected candidate's values and test accuracy
// (nil when nothing is released), and how the tuning ended.
type ReportFacts struct {
	Tuner, Dataset  string
	NominalSize     int
	Selected        map[string]float64
	SelectedChoices map[string]string // the categorical dimensions' choices by name
	// Fixed is the learning rate and clipping norm, by dimension name,
	// that every run took because the space has no such dimension (the
	// Hyper's Config): what a run used, for reports that print it.
	Fixed               map[string]float64
	TestAccuracy        *float64
	Epsilon, Delta      float64
	Accountant          string
	Seeded, SecureNoise bool
	Interrupted         bool
	Failed              string
	Ledger              accounting.Ledger
}

// Uses says which common settings of a Spec a tuner reads; a caller refuses
// the others, set by a user, rather than ignore them.
type Uses struct {
	// Repetitions: the number of runs K is drawn from Spec.Repetitions,
	// by default from the distribution named DefaultRuns (accounting.TNB
	// or accounting.Poisson). False: K is fixed by the tuner.
	Repetitions bool
	DefaultRuns string
	// TrainerScores: the validation scores are the Trainer's, on a private
	// split (noisy counts) or public data (Spec.Validation); false: the
	// tuner scores on a private split itself.
	TrainerScores bool
	// Diagnostics: Result.Diagnostics is filled when asked for.
	Diagnostics bool
	// Default: the tuner can put the published default settings among its
	// candidates (Spec.Default).
	Default bool
}

// Spec is one tuning's settings, all public and known before the data is
// read. Sizes are nominal.
type Spec struct {
	Space       Space
	Repetitions accounting.Repetitions // distribution of K (Uses.Repetitions)
	// Accountant names the accountant of the tuning's ledger: "" or "rdp"
	// (proved bounds), or one a tuner adds (Tuner.Accountant).
	Accountant string
	// Validation is "private" (scores released as noisy counts on ValSize
	// held-out examples) or "public".
	Validation string
	ValSize    int
	// TrainN is the nominal number of training examples (after the
	// validation hold-out); BatchSize, Epochs and Momentum are each DP-SGD
	// run's.
	TrainN, BatchSize, Epochs int
	Momentum                  float64
	// Delta is the total δ, for a tuner whose Event depends on it (the
	// vote calibrates its noise to its own ε at Delta).
	Delta float64
	// Budget says a budget file will be charged.
	Budget bool
	// Options are the tuner's own settings by name (Tuner.Options), a
	// missing one at its default; Check refuses a name the tuner does not
	// declare and a value of the wrong type (CheckOptions).
	Options Values
	// Default, if not nil, is one more candidate beside the space's grid:
	// the published default settings (DefaultCandidate), for a tuner whose
	// Uses.Default is true; the Trainer's event must count its run.
	// DefaultWeight is random-stop's prior weight on it (Config).
	Default       *Candidate
	DefaultWeight float64

	// Invocation, if not "", names one tuning across the processes that
	// run it (a tuning resumed after a kill): the doubling tuner tags the
	// search it records in its score cache with it (PartitionScorer).
	Invocation string

	// Seed, Key, Progress, Jobs and Diagnostics are as in Config.
	Seed        *uint64
	Key         *randsrc.Key
	Progress    func(run, runs int)
	Jobs        Jobs
	Diagnostics bool
}

// config is the shared loop's Config of a spec.
func (s Spec) config(t Trainer, r runner.Runner) Config {
	return Config{Space: s.Space, Trainer: t, Repetitions: s.Repetitions, Seed: s.Seed, Key: s.Key, Progress: s.Progress,
		Runner: r, Jobs: s.Jobs, Diagnostics: s.Diagnostics, Default: s.Default, DefaultWeight: s.DefaultWeight}
}

// Candidates is the number of candidates of s: its space's, and Default.
func (s Spec) Candidates() int { return s.config(nil, nil).candidates() }

// CheckDefault refuses s.Default for a tuner that cannot take it (tu's
// Uses.Default), and a default weight without a default. The error wraps
// ErrInvalid. The tuner's Check refuses a weight it does not take.
func CheckDefault(tu Tuner, s Spec) error {
	if s.Default == nil {
		if s.DefaultWeight != 0 {
			return invalidf("a default weight needs the default among the candidates")
		}
		return nil
	}
	if !tu.Uses().Default {
		return invalidf("the %s tuner cannot take the default among its candidates", tu.Name())
	}
	return nil
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Tuner{}
	order      []string // registration order
)

// Register adds a tuner; it panics on a duplicate or empty name (a
// programming error: each tuner registers once, from its own file's init).
func Register(t Tuner) {
	registryMu.Lock()
	defer registryMu.Unlock()
	n := t.Name()
	if n == "" {
		panic("tuning: a tuner without a name")
	}
	if _, dup := registry[n]; dup {
		panic("tuning: tuner " + n + " registered twice")
	}
	registry[n] = t
	order = append(order, n)
}

// Lookup returns the tuner called name, or an error wrapping ErrInvalid
// that lists the registered names.
func Lookup(name string) (Tuner, error) {
	registryMu.RLock()
	t, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return nil, invalidf("unknown tuner %q (want %s)", name, NamesList(nil))
	}
	return t, nil
}

// Names returns the registered tuners' names in registration order (the
// built-in ones first, in the order of builtin.go).
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return slices.Clone(order)
}

// Tuners returns the registered tuners, in registration order.
func Tuners() []Tuner {
	var ts []Tuner
	for _, n := range Names() {
		t, _ := Lookup(n)
		ts = append(ts, t)
	}
	return ts
}

// NamesList is the registered names and extra, in that order, as English
// ("a, b or c"): for help text and errors.
func NamesList(extra []string) string {
	names := append(Names(), extra...)
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Calibrate returns the noise multiplier σ of the base run — base(σ) is one
// run's event — such that tu's whole tuning under spec, tu.Event(base(σ),
// spec), meets (eps, delta) under tu.Accountant(spec), never above eps
// (accounting.CalibrateNoise). It is the one calibration of every tuner.
func Calibrate(ctx context.Context, tu Tuner, spec Spec, base func(sigma float64) accounting.Event, eps, delta float64) (float64, error) {
	return accounting.CalibrateNoise(ctx, tu.Accountant(spec), func(s float64) accounting.Event { return tu.Event(base(s), spec) }, eps, delta)
}

// CalibrateAfter is Calibrate for a tuning that first spends before (a
// shared data normalisation, SharedDataNorm.Event, released before any
// run; nil: none): the base noise multiplier σ such that before composed
// with the tuner's event of base(σ) meets (eps, delta).
func CalibrateAfter(ctx context.Context, tu Tuner, spec Spec, before accounting.Event, base func(sigma float64) accounting.Event, eps, delta float64) (float64, error) {
	if before == nil {
		return Calibrate(ctx, tu, spec, base, eps, delta)
	}
	return accounting.CalibrateNoise(ctx, tu.Accountant(spec), func(s float64) accounting.Event {
		return accounting.Composed{Events: []accounting.Event{before, tu.Event(base(s), spec)}}
	}, eps, delta)
}

// Exampler is a tuner with an example for help text: its command-line
// settings beyond --tuner and --out ("--space mnist-dphypo --epsilon 8").
type Exampler interface {
	Example() string
}

// Shortfall is a tuner that says why a budget is too small for it: what its
// fixed part spends at delta, for the error of a failed calibration.
type Shortfall interface {
	Shortfall(spec Spec, delta float64) string
}
