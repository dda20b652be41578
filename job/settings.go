package job

import (
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// Given is the set of settings a person gave explicitly, by their
// command-line names ("epochs", "batch-size", …). The settings types of
// this package (TrainSettings, TuneSettings, AccountSettings, …) read the
// settings as a person gives them, so they tell a value given from a
// default by it: a built-in network's own settings stand for the ones not
// given, and some settings are refused unless another is given. A nil
// Given holds nothing.
type Given map[string]bool

// names are g's names in sorted order (as a flag set visits them).
func (g Given) names() []string { return slices.Sorted(maps.Keys(g)) }

// Invalidf is an error with the message of format and a that wraps
// ErrInvalid: a request refused before any work, for the packages that
// build requests on this one (bench).
func Invalidf(format string, a ...any) error { return invalidf(format, a...) }

// Invalid marks err as a refused request (wrapping ErrInvalid), keeping its
// message and chain.
func Invalid(err error) error { return invalid(err) }

// ParseTrainDefaults reads default settings given as text, e.g.
// "batch_size=4096,epochs=40,learning_rate=8,momentum=0.9,clip_norm=0.1",
// with source saying where they come from (for reports): nil when settings
// and source are both "". Every one of the five settings is required,
// once; the batch size and epochs are positive integers; source is
// required with settings and refused without them. Errors wrap ErrInvalid
// and name the flags --default-settings and --default-source.
func ParseTrainDefaults(settings, source string) (*TrainDefaults, error) {
	if settings == "" {
		if source != "" {
			return nil, invalidf("--default-source needs --default-settings")
		}
		return nil, nil
	}
	if source == "" {
		return nil, invalidf("--default-settings needs --default-source: say where the settings come from")
	}
	d := TrainDefaults{Source: source}
	seen := map[string]bool{}
	for _, kv := range strings.Split(settings, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, invalidf("--default-settings: %q is not name=number", kv)
		}
		integer := func() (int, error) {
			if x != math.Trunc(x) || x < 1 || x > math.MaxInt32 {
				return 0, invalidf("--default-settings: %s = %v is not a positive integer", k, v)
			}
			return int(x), nil
		}
		switch k {
		case tuning.BatchSize:
			d.BatchSize, err = integer()
		case tuning.Epochs:
			d.Epochs, err = integer()
		case tuning.LearningRate:
			d.LearningRate = x
		case tuning.Momentum:
			d.Momentum = x
		case tuning.ClipNorm:
			d.ClipNorm = x
		default:
			return nil, invalidf("--default-settings: unknown setting %q (want %s, %s, %s, %s and %s)", k, tuning.BatchSize, tuning.Epochs, tuning.LearningRate, tuning.Momentum, tuning.ClipNorm)
		}
		if err != nil {
			return nil, err
		}
		seen[k] = true
	}
	if len(seen) != 5 {
		return nil, invalidf("--default-settings needs all of %s, %s, %s, %s and %s", tuning.BatchSize, tuning.Epochs, tuning.LearningRate, tuning.Momentum, tuning.ClipNorm)
	}
	return &d, nil
}

// ClippingSettings are a command's per-example clipping as a person gives
// it: Rule "flat" or "automatic" and, for automatic clipping, its
// stability constant Gamma (the flags --clipping and --auto-clip-gamma).
type ClippingSettings struct {
	Rule  string
	Gamma float64
}

// Resolve checks the clipping settings c and returns the clipping rule and
// stability constant a job takes (0 under flat clipping). It refuses, before
// any work, a rule other than flat or automatic, a Gamma given without
// automatic clipping or not finite and at least dpsgd.MinAutoClipGamma (the check
// TrainSpec, TuneSpec and the audit make), and automatic clipping with an
// explicit "clip-norm" (when the command has one: hasClipNorm). Errors wrap
// ErrInvalid and name the flags.
func (c ClippingSettings) Resolve(given Given, hasClipNorm bool) (dpsgd.Clipping, float64, error) {
	rule, err := dpsgd.ParseClipping(c.Rule)
	switch {
	case err != nil:
		return rule, 0, invalidf("--clipping %q: want flat or automatic", c.Rule)
	case rule != dpsgd.AutomaticClipping && given["auto-clip-gamma"]:
		return rule, 0, invalidf("--auto-clip-gamma is the stability constant of --clipping automatic")
	case rule == dpsgd.AutomaticClipping && hasClipNorm && given["clip-norm"]:
		return rule, 0, invalidf("--clipping automatic takes no --clip-norm: every clipped gradient has norm below 1, its sensitivity")
	case rule == dpsgd.AutomaticClipping && dpsgd.CheckAutoClipGamma(c.Gamma) != nil:
		return rule, 0, invalidf("--auto-clip-gamma %v must be finite and at least %g", c.Gamma, dpsgd.MinAutoClipGamma)
	case rule == dpsgd.AutomaticClipping:
		return rule, c.Gamma, nil
	}
	return dpsgd.FlatClipping, 0, nil
}

// RunDefaults sets epochs, batch and momentum to src's built-in network's
// own settings on its dataset (NetworkDefaultsOn) for each of "epochs",
// "batch-size" and "momentum" not given; a network without such settings
// leaves them as they are.
func RunDefaults(src Source, given Given, epochs, batch *int, momentum *float64) {
	d, ok := NetworkDefaultsOn(src.Arch.Spec, src.Name)
	if !ok {
		return
	}
	if !given["epochs"] {
		*epochs = d.Epochs
	}
	if !given["batch-size"] {
		*batch = d.BatchSize
	}
	if !given["momentum"] {
		*momentum = d.Momentum
	}
}

// CheckOutRoom checks, before any work, that dir is a writable directory
// (CheckOut) with room for a release of src's network (CheckRoom). Errors
// wrap ErrInvalid and name the flag --out.
func CheckOutRoom(dir string, src Source) error {
	if err := CheckOut(dir); err != nil {
		return invalidWrapf(err, "--out: %v", err)
	}
	need, err := ReleaseBytes(src.Arch)
	if err == nil {
		err = CheckRoom(dir, need)
	}
	if err != nil {
		return invalidWrapf(err, "--out: %v", err)
	}
	return nil
}

// RepeatSettings are the distribution of the number of runs K of
// random-stop tuning as a person gives it (the flags of account and audit):
// Dist is "tnb" (shape Eta, and Gamma or MeanRuns), "poisson" (MeanRuns),
// "binary" (K = 1 with probability BinaryS, else BinaryL), "fixed" (Runs),
// or "" for none.
type RepeatSettings struct {
	Dist                 string
	Eta, Gamma, MeanRuns float64
	BinaryL, Runs        int
	BinaryS              float64
}

// Repetitions returns the distribution r names, nil when Dist is "" (then
// refusing each of its settings given), or an error wrapping ErrInvalid
// that names the flag at fault: a setting of another distribution given, a
// TNB with both or neither of "gamma" and "mean-runs" given, values out of
// range (accounting.Repetitions.Check).
func (r RepeatSettings) Repetitions(given Given) (*accounting.Repetitions, error) {
	own := map[string][]string{accounting.TNB: {"eta", "gamma", "mean-runs"}, accounting.Poisson: {"mean-runs"},
		accounting.Binary: {"binary-l", "binary-s"}, accounting.Fixed: {"runs"}}
	allowed := map[string]bool{}
	for _, n := range own[r.Dist] {
		allowed[n] = true
	}
	for _, n := range []string{"eta", "gamma", "mean-runs", "binary-l", "binary-s", "runs"} {
		if given[n] && !allowed[n] {
			if r.Dist == "" {
				return nil, invalidf("--%s needs --repeat", n)
			}
			return nil, invalidf("--%s is not an option of --repeat %s", n, r.Dist)
		}
	}
	var rep accounting.Repetitions
	switch r.Dist {
	case "":
		return nil, nil
	case accounting.TNB:
		if !(r.Eta > -1) || math.IsInf(r.Eta, 1) {
			return nil, invalidf("--eta %v must be greater than −1", r.Eta)
		}
		switch {
		case given["gamma"] && given["mean-runs"]:
			return nil, invalidf("give --gamma or --mean-runs, not both")
		case given["gamma"]:
			if !(r.Gamma > 0 && r.Gamma < 1) {
				return nil, invalidf("--gamma %v is outside (0, 1)", r.Gamma)
			}
			rep = accounting.TNBRepetitions(r.Eta, r.Gamma)
		case given["mean-runs"]:
			var err error
			if rep, err = TNBWithMeanOf(r.Eta, r.MeanRuns); err != nil {
				return nil, err
			}
		default:
			return nil, invalidf("--repeat tnb needs --gamma or --mean-runs")
		}
	case accounting.Poisson:
		if !(r.MeanRuns >= 1) || math.IsInf(r.MeanRuns, 1) {
			return nil, invalidf("--repeat poisson needs --mean-runs μ ≥ 1 (the bound is proved for those), have %v", r.MeanRuns)
		}
		rep = accounting.PoissonRepetitions(r.MeanRuns)
	case accounting.Binary:
		rep = accounting.BinaryRepetitions(r.BinaryL, r.BinaryS)
	case accounting.Fixed:
		rep = accounting.FixedRepetitions(r.Runs)
	default:
		return nil, invalidf("unknown --repeat %q (want tnb, poisson, binary or fixed)", r.Dist)
	}
	if err := rep.Check(); err != nil {
		return nil, invalid(err)
	}
	return &rep, nil
}

// TNBWithMeanOf is the TNB of shape eta and mean E[K] = mean
// (accounting.TNBWithMean), with an error wrapping ErrInvalid that names
// the flag at fault: --eta outside (−1, ∞), --mean-runs not finite or not
// above 1, or, with both in range, an --eta so large that no γ
// representable in float64 gives that mean.
func TNBWithMeanOf(eta, mean float64) (accounting.Repetitions, error) {
	if !(eta > -1) || math.IsInf(eta, 1) {
		return accounting.Repetitions{}, invalidf("--eta %v must be greater than −1", eta)
	}
	if !(mean > 1) || math.IsInf(mean, 1) {
		return accounting.Repetitions{}, invalidf("--mean-runs %v: a TNB's mean must be finite and above 1", mean)
	}
	rep, err := accounting.TNBWithMean(eta, mean)
	if err != nil {
		return rep, invalidf("--eta %v: no TNB of this shape has --mean-runs %v (%v)", eta, mean, err)
	}
	return rep, nil
}
