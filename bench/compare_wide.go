package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// A comparison's comparison-wide options (CompareConfig.Clipping,
// IncludeDefault, DefaultWeight, SelectionShare) go to every tuner
// entry's job.TuneSpec; the job checks them as it checks `dptune tune`'s
// flags.

// autoClipGamma is the stability constant of cfg's automatic clipping
// (dpsgd.DefaultAutoClipGamma for 0), 0 under flat clipping.
func (cfg CompareConfig) autoClipGamma() float64 {
	switch {
	case cfg.Clipping != dpsgd.AutomaticClipping:
		return cfg.AutoClipGamma
	case cfg.AutoClipGamma == 0:
		return dpsgd.DefaultAutoClipGamma
	}
	return cfg.AutoClipGamma
}

// defaultWeight is random-stop's weight on the default candidate
// (tuning.DefaultWeight for 0), 0 without it.
func (cfg CompareConfig) defaultWeight() float64 {
	switch {
	case !cfg.IncludeDefault:
		return cfg.DefaultWeight
	case cfg.DefaultWeight == 0:
		return tuning.DefaultWeight
	}
	return cfg.DefaultWeight
}

// checkWide refuses comparison-wide options no tuner could take, before
// any work: a selection share outside (0, 1), a default weight without the
// default among the candidates, the default among the candidates with no
// default settings, an unknown clipping rule or a stability constant
// under flat clipping. Errors wrap job.ErrInvalid. What each tuner takes
// is the job's to check (refusal).
func (cfg CompareConfig) checkWide() error {
	switch {
	case cfg.SelectionShare != 0 && !(cfg.SelectionShare > 0 && cfg.SelectionShare < 1):
		return fmt.Errorf("%w: selection share %v is outside (0, 1)", job.ErrInvalid, cfg.SelectionShare)
	case cfg.Subsample != 0 && !(cfg.Subsample > 0 && cfg.Subsample <= 1):
		return fmt.Errorf("%w: subsample ratio %v is outside (0, 1]", job.ErrInvalid, cfg.Subsample)
	case cfg.Subsample != 0 && cfg.SelectionShare == 0:
		return fmt.Errorf("%w: a tuning subset needs a selection share", job.ErrInvalid)
	case !cfg.IncludeDefault && cfg.DefaultWeight != 0:
		return fmt.Errorf("%w: a default weight needs the default among the candidates", job.ErrInvalid)
	case cfg.Clipping != dpsgd.FlatClipping && cfg.Clipping != dpsgd.AutomaticClipping:
		return fmt.Errorf("%w: unknown clipping %v", job.ErrInvalid, cfg.Clipping)
	case cfg.Clipping == dpsgd.FlatClipping && cfg.AutoClipGamma != 0:
		return fmt.Errorf("%w: flat clipping takes no stability constant", job.ErrInvalid)
	}
	if cfg.IncludeDefault {
		if _, err := cfg.defaultSettings(); err != nil {
			return err
		}
	}
	return nil
}

// wideSettings records cfg's comparison-wide options in s, each left
// absent when off.
func (cfg CompareConfig) wideSettings(s *CompareSettings) {
	if cfg.Clipping == dpsgd.AutomaticClipping {
		s.Clipping, s.AutoClipGamma = cfg.Clipping.String(), cfg.autoClipGamma()
	}
	if cfg.IncludeDefault {
		s.IncludeDefault, s.DefaultWeight = true, cfg.defaultWeight()
		if d, err := cfg.defaultSettings(); err == nil {
			s.DefaultCandidate = &d
		}
	}
	s.SelectionShare, s.Subsample = cfg.SelectionShare, cfg.Subsample
	s.DefaultLabel = cfg.DefaultLabel
}

// applyWide gives spec, a tuning by a tuner that uses uses, cfg's
// comparison-wide options: random-stop's default weight only to a tuner
// that draws its runs (the others train the default once).
func (cfg CompareConfig) applyWide(spec *job.TuneSpec, uses tuning.Uses) {
	if cfg.Clipping == dpsgd.AutomaticClipping {
		spec.Clipping, spec.AutoClipGamma = cfg.Clipping, cfg.autoClipGamma()
	}
	if cfg.IncludeDefault {
		spec.IncludeDefault = true
		if d, err := cfg.defaultSettings(); err == nil {
			spec.Default = &d
		}
		if uses.Repetitions {
			spec.DefaultWeight = cfg.defaultWeight()
		}
	}
	spec.SelectionShare, spec.Subsample = cfg.SelectionShare, cfg.Subsample
}

// refusal is why entry e's tuner refuses one of cfg's comparison-wide
// options at budget eps ("" when it takes them all): the job's own
// reason, given only when the same tuning without the refused options is
// not refused too (that error is returned, for every entry alike).
func (cfg CompareConfig) refusal(ctx context.Context, e CompareEntry, eps float64) (string, error) {
	tu, err := tuning.Lookup(e.Tuner)
	if err != nil {
		return "", fmt.Errorf("%w: %v", job.ErrInvalid, err)
	}
	_, partitioned := tu.(tuning.Partitioned)
	without := cfg
	if cfg.IncludeDefault && !tu.Uses().Default {
		without.IncludeDefault, without.DefaultWeight = false, 0
	}
	if cfg.SelectionShare != 0 && partitioned {
		without.SelectionShare, without.Subsample = 0, 0
	}
	if without.IncludeDefault == cfg.IncludeDefault && without.SelectionShare == cfg.SelectionShare {
		return "", nil
	}
	spec, err := compareSpec(without, e, eps, 0)
	if err == nil {
		_, err = job.CheckTune(ctx, spec)
	}
	if err != nil && !errors.Is(err, accounting.ErrOutOfReach) {
		return "", fmt.Errorf("%s at ε = %g: %w", e.Name(), eps, err)
	}
	spec, err = compareSpec(cfg, e, eps, 0)
	if err == nil {
		_, err = job.CheckTune(ctx, spec)
	}
	if err == nil { // the job took it after all
		return "", nil
	}
	if !errors.Is(err, job.ErrInvalid) {
		return "", fmt.Errorf("%s at ε = %g: %w", e.Name(), eps, err)
	}
	return strings.TrimPrefix(err.Error(), job.ErrInvalid.Error()+": "), nil
}

// rowOptions records in row the comparison-wide options a tuning's
// report states (its clipping, the default among its candidates, its
// selection share) and its ε components: what reached job.Tune.
func rowOptions(report any, row *CompareRow) {
	b, err := json.Marshal(report)
	if err != nil {
		return
	}
	var o struct {
		Clipping          string                    `json:"clipping"`
		IncludesDefault   bool                      `json:"includes_default"`
		SelectionShare    float64                   `json:"selection_share"`
		Subsample         float64                   `json:"subsample"`
		EpsilonComponents []tuning.EpsilonComponent `json:"epsilon_components"`
	}
	if json.Unmarshal(b, &o) == nil {
		row.Clipping, row.IncludesDefault, row.SelectionShare, row.Subsample = o.Clipping, o.IncludesDefault, o.SelectionShare, o.Subsample
		if o.SelectionShare != 0 {
			row.EpsilonComponents = o.EpsilonComponents
		}
	}
}

// Options names s's comparison-wide options for people, "" when there
// are none: "automatic clipping (γ = 0.01), the default among the
// candidates (random-stop's weight 0.25), selection share 0.25" (the
// weight where random-stop is among the entries).
func (s CompareSettings) Options() string {
	var parts []string
	if s.DefaultLabel != "" {
		parts = append(parts, "the default "+s.DefaultLabel)
	}
	if s.Clipping != "" {
		parts = append(parts, fmt.Sprintf("%s clipping (γ = %g)", s.Clipping, s.AutoClipGamma))
	}
	if s.IncludeDefault {
		weight := ""
		if slices.ContainsFunc(s.Entries, func(e CompareEntry) bool { return e.Tuner == tuning.RandomStopName }) {
			weight = fmt.Sprintf(" (random-stop's weight %g)", s.DefaultWeight)
		}
		parts = append(parts, "the default among the candidates"+weight)
	}
	if s.SelectionShare != 0 {
		parts = append(parts, fmt.Sprintf("selection share %g", s.SelectionShare))
	}
	if s.Subsample != 0 {
		parts = append(parts, fmt.Sprintf("selection on a Poisson tuning subset of ratio %g", s.Subsample))
	}
	return strings.Join(parts, ", ")
}
