package bench

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// SeedsRequest is a seeds measurement as a person asks for it (the flags
// of dptune bench seeds, by whose names Given and the errors speak):
// Config checks it and makes the SeedsConfig.
type SeedsRequest struct {
	// Models are built-in networks or JSON spec files, each trained on the
	// dataset with its published settings, or DefaultSettings (with
	// DefaultSource; job.ParseTrainDefaults) in their place.
	Models                         []string
	DefaultSettings, DefaultSource string
	Epsilon, Delta                 float64
	Seeds                          int // seeds 1, …, Seeds
	Clipping                       job.ClippingSettings
	// Out holds seeds.json, seeds.md and the cache of finished runs.
	Out string
	// Given are the settings given explicitly, by flag name.
	Given job.Given
}

// Config checks r for a measurement on the dataset data reads (once the
// settings that need no data are checked) and returns its settings. It
// refuses, before any run, with an error wrapping job.ErrInvalid that
// names the flag at fault: no networks, a seed count outside [1, 1000], a
// single --model or a --budget given, a bad clipping rule, ε or δ, a
// network without published settings and no DefaultSettings.
func (r SeedsRequest) Config(data func() (job.Source, error)) (SeedsConfig, error) {
	var cfg SeedsConfig
	switch {
	case len(r.Models) == 0:
		return cfg, job.Invalidf("--models names no network")
	case r.Seeds < 1 || r.Seeds > 1000:
		return cfg, job.Invalidf("--seeds %d is outside [1, 1000]", r.Seeds)
	case r.Given["model"]:
		return cfg, job.Invalidf("give the networks with --models")
	case r.Given["budget"]:
		return cfg, job.Invalidf("--budget: a benchmark is not a release; it charges no budget file")
	}
	clipping, gamma, err := r.Clipping.Resolve(r.Given, false)
	if err != nil {
		return cfg, err
	}
	if err := accounting.CheckEpsilon(r.Epsilon); err != nil {
		return cfg, job.Invalidf("--epsilon: %v", err)
	}
	if err := accounting.CheckDelta(r.Delta); err != nil {
		return cfg, job.Invalidf("--delta: %v", err)
	}
	def, err := job.ParseTrainDefaults(r.DefaultSettings, r.DefaultSource)
	if err != nil {
		return cfg, err
	}
	base, err := data()
	if err != nil {
		return cfg, err
	}
	var sources []job.Source
	for _, m := range r.Models {
		spec, err := model.LoadSpec(m)
		if err != nil {
			return cfg, job.Invalid(err)
		}
		src, err := base.WithModel(spec)
		if err != nil {
			return cfg, err
		}
		if _, ok := job.NetworkDefaultsOn(src.Arch.Spec, src.Name); !ok && def == nil {
			return cfg, job.Invalidf("--models: %s has no published settings on %s (give them with --default-settings and --default-source)", m, src.Name)
		}
		sources = append(sources, src)
	}
	if err := job.CheckOut(r.Out); err != nil {
		return cfg, job.Invalidf("--out: %v", err)
	}
	return SeedsConfig{Sources: sources, Epsilon: r.Epsilon, Delta: r.Delta, Seeds: CompareSeeds(r.Seeds), Dir: r.Out,
		Clipping: clipping, AutoClipGamma: gamma, Default: def}, nil
}

// WriteAll saves rep in dir — seeds.json (Save) and seeds.md
// (WriteSeedsMarkdown) — and returns seeds.md's text.
func (rep *SeedsReport) WriteAll(dir string) (string, error) {
	if err := rep.Save(dir); err != nil {
		return "", err
	}
	var md strings.Builder
	WriteSeedsMarkdown(&md, rep)
	if err := os.WriteFile(filepath.Join(dir, "seeds.md"), []byte(md.String()), 0o644); err != nil {
		return "", err
	}
	return md.String(), nil
}
