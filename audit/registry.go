package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/registry"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// ErrInvalid is wrapped by every error a Game's Check or New returns for
// settings it cannot play, and by Claims.Epsilons' errors but
// cancellation's: the request is refused before any trial.
var ErrInvalid = errors.New("invalid audit")

// invalidError is err, refused: it wraps ErrInvalid and err, with err's
// message.
type invalidError struct{ error }

func (e invalidError) Unwrap() []error { return []error{ErrInvalid, e.error} }

func invalid(err error) error { return invalidError{err} }

func invalidf(format string, a ...any) error { return invalid(fmt.Errorf(format, a...)) }

// Settings are an audit's parameters as its Game reads them: the fields of
// the caller's request (package job's AuditSpec, whose doc says which
// protocol reads which), and, for a game that trains on real data, that
// data, read by the caller between Check and New.
type Settings struct {
	// Mu is the reduced game's shift; Repetitions the distribution of the
	// number of runs of the games that tune.
	Mu          float64
	Repetitions accounting.Repetitions
	// NoiseMultiplier, BaseEpsilon, SamplingRate, ClipNorm, Steps, Size:
	// the DP-SGD runs of a Game with DPSGD set. Before New the caller
	// replaces NoiseMultiplier by the σ that makes one run on RunArch
	// (BaseEpsilon, δ)-DP by RDP, if BaseEpsilon is set.
	NoiseMultiplier, BaseEpsilon, SamplingRate, ClipNorm float64
	Steps, Size                                          int
	// Observe is what the adversary sees (one of Game.Views).
	Observe        string
	LearningRate   float64
	GPOptions      tuning.GPOptions
	ScoreNoise     float64
	AboveThreshold tuning.CappedSearchConfig

	// OnData says the audit trains on real data (Game.OnData). Base, Image
	// and Arch are then set before New: the first Size training examples,
	// the game's canary image (Game.Image), both as Arch reads them (the
	// features of a network with a fixed front end), and the network.
	OnData bool
	Base   *data.Dataset
	Image  []float32
	Arch   model.Arch
}

// RunArch is the network the DP-SGD runs of s train: Arch on real data,
// else CanaryArch.
func (s Settings) RunArch() model.Arch {
	if s.OnData {
		return s.Arch
	}
	return CanaryArch
}

// size is the canary audits' Size, 0 meaning 1.
func (s Settings) size() int {
	if s.Size == 0 {
		return 1
	}
	return s.Size
}

// checkRepetitions returns an error wrapping ErrInvalid unless s's
// distribution of the number of runs can be drawn from (CheckSampled) and,
// for a fixed or binary number, its L is at most tuning.MaxRuns, the most
// runs a tuning plays (the claims' integrals alone took seconds above it).
func (s Settings) checkRepetitions() error {
	r := s.Repetitions
	if err := r.CheckSampled(); err != nil {
		return invalid(err)
	}
	if (r.Distribution == accounting.Fixed || r.Distribution == accounting.Binary) && r.L > tuning.MaxRuns {
		return invalidf("%d runs is above %d, the most runs a tuning plays", r.L, tuning.MaxRuns)
	}
	return nil
}

// Claims are the events a protocol's privacy is claimed by, by the name of
// the claim: "rdp", "pld" and "basic" are those accountants' ε of the
// event; "xiang-o" is RDP of Xiang et al.'s Algorithm 3 (an
// accounting.GaussianSelect), exact for the reduced game and approximate
// for DP-SGD.
type Claims map[string]accounting.Event

// claimants are the accountants of the claims' names.
var claimants = map[string]accounting.Accountant{"rdp": accounting.RDP{}, "pld": accounting.PLD{}, "basic": accounting.Basic{}, "xiang-o": accounting.RDP{}}

// Epsilons returns the ε_U of every claim at delta, in nats, leaving out
// the infinite ones. An accountant's error wraps ErrInvalid; cancellation
// returns ctx's error.
func (c Claims) Epsilons(ctx context.Context, delta float64) (map[string]float64, error) {
	out := map[string]float64{}
	for name, e := range c {
		acc, ok := claimants[name]
		if !ok {
			return nil, fmt.Errorf("audit: a claim named %q, which no accountant makes", name)
		}
		g, err := accounting.EpsilonContext(ctx, acc, e, delta)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		if err != nil {
			return nil, invalid(err)
		}
		if !math.IsInf(g.Epsilon, 0) {
			out[name] = g.Epsilon
		}
	}
	return out, nil
}

// DataUse says whether a Game trains on real data.
type DataUse int

const (
	// DataNone: the game trains no network on data (X = ∅, or no network).
	DataNone DataUse = iota
	// DataOptional: the game trains on real data when the caller has some
	// (the tuner audit: Xiang et al.'s NTCV), else on X = ∅.
	DataOptional
	// DataRequired: the game trains on real data (the natural audit).
	DataRequired
)

// A Bound checks one real parameter of a game before any work, where
// people set it (the command line names it Flag): a range that no trial
// can run outside, or a budget that cannot be calibrated.
type Bound struct {
	// Flag is the parameter's command-line flag, without dashes.
	Flag string
	// Check returns an error, one line that begins with label, if v is
	// out of range.
	Check func(label string, v float64) error
}

// A Game is an audit protocol people choose by name (`dptune audit NAME`):
// each protocol's own file registers it with Register. Package job plays
// one as: Check, then (for a game on data) read the data, then (for a
// DP-SGD game) calibrate σ, then New, then the trials (Run).
type Game struct {
	// Name is the protocol's name; Rank orders the names in lists (help
	// texts, errors): lower first.
	Name string
	Rank int
	// Help describes the game for `dptune audit --help`: lines of at most
	// 60 characters.
	Help string
	// Fields are the Settings fields (by Go name, as package job's
	// AuditSpec names them too) the game's trials depend on, besides the
	// protocol, δ and the confidence: the trial file's header records
	// them, so that a resume with another setting is refused.
	Fields []string
	// Data says whether the game trains on real data; Image, if set, is
	// the canary image it inserts into that data, given its network (in
	// pixels: the caller passes it through the network's fixed front end).
	Data  DataUse
	Image func(model.Arch) []float32
	// DPSGD says the trials are DP-SGD runs of RunArch: the caller
	// calibrates NoiseMultiplier from BaseEpsilon before New.
	DPSGD bool
	// Views are what the adversary may be chosen to see
	// (Settings.Observe), the default first; nil: no choice.
	Views []string
	// GDPFit says a μ-GDP fitted to the statistics (GDPEstimate) is worth
	// reporting beside ε_L (every iterate of one DP-SGD run).
	GDPFit bool
	// Bounds are the ranges of its real parameters, checked where people
	// set them, in this order, before any work.
	Bounds []Bound
	// Refuses names Settings fields the game has no use for and that a
	// command line refuses rather than ignores, with why.
	Refuses map[string]string
	// Check refuses, before any data is read, settings the game cannot
	// play: errors wrap ErrInvalid.
	Check func(s Settings) error
	// New returns the protocol of s and its claims. Errors that refuse s
	// wrap ErrInvalid.
	New func(s Settings) (Protocol, Claims, error)
}

// Uses reports whether the game's trials depend on the Settings field
// named field (Fields).
func (g Game) Uses(field string) bool { return slices.Contains(g.Fields, field) }

// TakesData reports whether the game can train on real data.
func (g Game) TakesData() bool { return g.Data != DataNone }

// OnData reports whether the game trains on real data when the caller
// has some (given) or not.
func (g Game) OnData(given bool) bool {
	return g.Data == DataRequired || g.Data == DataOptional && given
}

var games = registry.New[Game]("audit: protocol")

// Register makes g known by its name. Protocols register themselves in
// init; registering a name twice, or an empty name, panics (a programming
// error, like http.Handle's).
func Register(g Game) { games.Register(g.Name, g.Rank, g) }

// Lookup returns the game registered as name.
func Lookup(name string) (Game, bool) { return games.Lookup(name) }

// Games lists the registered games that keep accepts (all, for a nil
// keep), by rank.
func Games(keep func(Game) bool) []Game {
	var out []Game
	for _, name := range games.Names(nil) {
		g, _ := games.Lookup(name)
		if keep == nil || keep(g) {
			out = append(out, g)
		}
	}
	return out
}

// Names lists the names of the registered games that keep accepts (all,
// for a nil keep), by rank.
func Names(keep func(Game) bool) []string {
	return games.Names(keep)
}

// Either lists the names of the registered games that keep accepts as
// English ("a, b or c").
func Either(keep func(Game) bool) string { return registry.Either(Names(keep)) }
