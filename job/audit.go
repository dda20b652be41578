package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"

	"github.com/dptune/dptune/audit"
	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/model/features"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// Limits of an audit (package audit), checked before any work.
const (
	// MinAuditTrials is the fewest games `dptune audit` plays: with fewer,
	// Clopper–Pearson on the evaluation half certifies nothing of use
	// (Audit itself takes 4, for tests).
	MinAuditTrials = 100
	// The other limits are package audit's (MaxTrials, MaxCanarySize,
	// MaxCanaryClipNorm, MinCanarySamplingRate) and the score audit's σ
	// noise.MaxDiscreteSigma.
)

// The protocols Audit plays (Xiang et al., Algorithm 1), as they register
// in package audit (audit.Games).
const (
	AuditReduced        = "reduced"         // the reduced tuning game of their Fig. 5
	AuditDPSGD          = "dpsgd"           // one DP-SGD run, Dirac gradient canary (ETCV, §4)
	AuditTuner          = "tuner"           // random-stop tuning of such runs
	AuditGP             = tuning.GPName     // DP-HyPO tuning of such runs
	AuditGrid           = tuning.GridName   // grid search over such runs
	AuditNatural        = "natural"         // one DP-SGD run on real data, out-of-distribution image canary
	AuditScore          = "score"           // the private score's integer release
	AuditAboveThreshold = "above-threshold" // Ding et al.'s capped AboveThreshold search
)

// AuditSpec is one privacy audit: Trials games of Protocol, the lower bound
// ε_L at Delta with Confidence (Clopper–Pearson, two-sided), and the claims
// ε_U of every accountant that covers the protocol.
type AuditSpec struct {
	Protocol   string
	Trials     int
	Seed       uint64
	Delta      float64
	Confidence float64 // default 0.95
	// CSV streams the trials' statistics (an interrupted audit resumes);
	// Progress is called as trials finish.
	CSV      string                `json:"-"`
	Progress func(done, total int) `json:"-"`
	// Runner, if not nil, plays the trials in blocks as runner jobs
	// (KindAuditTrials); nil: OpenRunner's, or all cores of this process.
	// OpenRunner is called once every check has passed.
	Runner     runner.Runner                                `json:"-"`
	OpenRunner func(context.Context) (runner.Runner, error) `json:"-"`

	// Mu (reduced) is the reduced game's shift; Repetitions (reduced,
	// tuner) the distribution of the number of runs.
	Mu          float64
	Repetitions accounting.Repetitions
	// DP-SGD runs (dpsgd, tuner): σ (or BaseEpsilon, calibrating σ by RDP),
	// τ, steps, C, on Size examples without gradient (X = ∅; Size in
	// [1, audit.MaxCanarySize], 0 meaning 1; σ at most
	// accounting.MaxNoiseMultiplier).
	NoiseMultiplier, BaseEpsilon, SamplingRate, ClipNorm float64
	Steps, Size                                          int
	// Observe (dpsgd) is what the adversary sees: audit.ObserveAll (every
	// iterate; the default) or audit.ObserveLast (the last iterate).
	Observe string
	// Data and Size (natural, and tuner when Data is set: Xiang et al.'s
	// NTCV): the real training subset is the first Size training examples
	// of Data; LearningRate trains it (natural; the tuner's canary runs
	// use 1, their statistic being in units of the step).
	Data         Source `json:"-"`
	LearningRate float64
	// GPOptions (gp) are DP-HyPO's.
	GPOptions tuning.GPOptions
	// ScoreNoise (score) is the discrete Gaussian's σ on a count.
	ScoreNoise float64
	// AboveThreshold (above-threshold) is the search's configuration; its
	// first candidate's utility rises by 1/k on X′.
	AboveThreshold tuning.CappedSearchConfig
}

// AuditResult is audit.json: exactly these keys.
type AuditResult struct {
	EpsilonLower float64            `json:"epsilon_lower"`
	Confidence   float64            `json:"confidence"`
	Delta        float64            `json:"delta"`
	Trials       int                `json:"trials"`
	EpsilonUpper map[string]float64 `json:"epsilon_upper"` // by accountant; "xiang-o" is approximate for DP-SGD
	// GDPMuEstimate and EpsilonGDPEstimate (dpsgd only) are the μ-GDP
	// fitted to the statistics and its ε at Delta (audit.GDPEstimate,
	// Nasr et al. 2023): an ESTIMATE beside ε_L, never a bound; exact in
	// the limit of many trials at sampling rate 1.
	GDPMuEstimate      *float64 `json:"gdp_mu_estimate,omitempty"`
	EpsilonGDPEstimate *float64 `json:"epsilon_gdp_estimate,omitempty"`
	// Detail is the lower bound's working (threshold, rates); Stats0 and
	// Stats1 the statistics, for plots.
	Detail         audit.LowerBound `json:"-"`
	Stats0, Stats1 []float64        `json:"-"`
}

// Audit plays s.Trials games of s.Protocol on all cores (audit.Run), bounds
// ε from below (audit.EpsilonLower: threshold chosen on one half of the
// trials, evaluated on the other) and computes the claims ε_U it is
// compared with: each protocol registers in package audit (audit.Game)
// with its name, its checks and its claims per accountant, which its file
// documents (audit.Games lists them). Beside ε_L, a protocol whose
// adversary sees every iterate of one DP-SGD run (Game.GDPFit: dpsgd)
// reports the GDP-fitted estimate (audit.GDPEstimate), labelled as one.
//
// The CSV's header records the audit (Params); a CSV that holds another
// audit's trials — another protocol, parameter, δ, confidence, seed or
// trial count — is refused before any work, naming the differing field, and
// so is a CSV that is not a regular file (a FIFO) or is longer than its
// trials can be. Settings no trial can run with are refused before any
// trial too: a score noise above noise.MaxDiscreteSigma, a clipping norm
// above audit.MaxCanaryClipNorm, a sampling rate below
// audit.MinCanarySamplingRate, a fixed or binary number of runs above
// tuning.MaxRuns.
//
// A refused request wraps ErrInvalid; cancellation returns ctx's error
// (finished trials stay in the CSV).
func Audit(ctx context.Context, s AuditSpec) (*AuditResult, error) {
	if s.Confidence == 0 {
		s.Confidence = 0.95
	}
	g, known := audit.Lookup(s.Protocol)
	if known && s.Observe == "" && len(g.Views) > 0 {
		s.Observe = g.Views[0]
	}
	switch {
	case s.Observe != "" && (!known || len(g.Views) == 0):
		return nil, invalidf("observe %q: only the %s audit has a choice of what the adversary sees", s.Observe, audit.Either(hasViews))
	case s.Trials < 4 || s.Trials > audit.MaxTrials:
		return nil, invalidf("%d trials: an audit plays between 4 and %d", s.Trials, audit.MaxTrials)
	case !(s.Confidence > 0 && s.Confidence < 1):
		return nil, invalidf("confidence %v is outside (0, 1)", s.Confidence)
	}
	if err := accounting.CheckDelta(s.Delta); err != nil {
		return nil, invalidf("delta: %v", err)
	}
	params, err := s.Params()
	if err != nil {
		return nil, invalid(err)
	}
	cfg := audit.Config{Trials: s.Trials, Seed: s.Seed, CSV: s.CSV, Progress: s.Progress, Protocol: params}
	if err := audit.CheckCSV(cfg); err != nil {
		if errors.Is(err, audit.ErrOtherAudit) || errors.Is(err, fsx.ErrNotRegular) {
			return nil, invalid(err)
		}
		return nil, err
	}
	p, claims, err := s.protocol(ctx)
	if err != nil {
		return nil, err
	}
	res := &AuditResult{Confidence: s.Confidence, Delta: s.Delta, Trials: s.Trials}
	if res.EpsilonUpper, err = claims.Epsilons(ctx, s.Delta); err != nil {
		return nil, refused(err)
	}
	if s.Runner == nil && s.OpenRunner != nil {
		if s.Runner, err = s.OpenRunner(ctx); err != nil {
			return nil, err
		}
	}
	if s.Runner != nil {
		cfg.Runner, cfg.Task = s.Runner, auditTask(s)
	}
	s0, s1, err := audit.Run(ctx, p, cfg)
	if errors.Is(err, audit.ErrOtherAudit) || errors.Is(err, fsx.ErrNotRegular) || errors.Is(err, fsx.ErrTooLarge) {
		return nil, invalid(err) // the CSV changed since CheckCSV, or is too long to be this audit's
	}
	if err != nil {
		return nil, err
	}
	lb, err := audit.EpsilonLower(s0, s1, s.Delta, s.Confidence)
	if err != nil {
		return nil, err
	}
	res.EpsilonLower, res.Detail, res.Stats0, res.Stats1 = lb.EpsilonLower, lb, s0, s1
	if g.GDPFit {
		if mu, eps, err := audit.GDPEstimate(s0, s1, s.Delta); err == nil {
			res.GDPMuEstimate, res.EpsilonGDPEstimate = &mu, &eps
		}
	}
	return res, nil
}

// hasViews keeps the protocols whose adversary's view can be chosen.
func hasViews(g audit.Game) bool { return len(g.Views) > 0 }

// refused is err, wrapping ErrInvalid too if it refuses an audit's
// settings (audit.ErrInvalid).
func refused(err error) error {
	if errors.Is(err, audit.ErrInvalid) {
		return invalid(err)
	}
	return err
}

// protocol builds s's protocol and the events of its claims, by accountant
// (the audit.Game registered as s.Protocol): the game's check, then the
// real data of a game that trains on it (realBase), then the runs' σ of a
// DP-SGD game (noiseMultiplier), then the game's protocol and claims.
func (s AuditSpec) protocol(ctx context.Context) (audit.Protocol, audit.Claims, error) {
	g, ok := audit.Lookup(s.Protocol)
	if !ok {
		return nil, nil, invalidf("unknown audit protocol %q (want %s)", s.Protocol, audit.Either(nil))
	}
	set := audit.Settings{Mu: s.Mu, Repetitions: s.Repetitions, NoiseMultiplier: s.NoiseMultiplier, BaseEpsilon: s.BaseEpsilon,
		SamplingRate: s.SamplingRate, ClipNorm: s.ClipNorm, Steps: s.Steps, Size: s.Size, Observe: s.Observe,
		LearningRate: s.LearningRate, GPOptions: s.GPOptions, ScoreNoise: s.ScoreNoise, AboveThreshold: s.AboveThreshold,
		OnData: g.OnData(s.Data.Load != nil)}
	if err := g.Check(set); err != nil {
		return nil, nil, refused(err)
	}
	if set.OnData {
		var err error
		if set.Base, set.Image, err = s.realBase(ctx, g.Image); err != nil {
			return nil, nil, err
		}
		set.Arch = s.Data.Arch
	}
	if g.DPSGD {
		sigma, err := s.noiseMultiplier(ctx, set.RunArch())
		if err != nil {
			return nil, nil, err
		}
		set.NoiseMultiplier = sigma
	}
	p, claims, err := g.New(set)
	if err != nil {
		return nil, nil, refused(err)
	}
	return p, claims, nil
}

// realBase is the real training subset of an audit on data (the natural
// audit, and the tuner audit on data: Xiang et al.'s NTCV): the first Size
// training examples of Data as its network reads them — for a network with
// a fixed front end, their features, by the same fixed, data-independent
// transform (computed here for these examples alone, wherever the trials
// run) — and, when canary is set (audit.Game.Image), the canary image
// likewise.
func (s AuditSpec) realBase(ctx context.Context, canary func(model.Arch) []float32) (base *data.Dataset, image []float32, err error) {
	if err := s.Data.Check(); err != nil {
		return nil, nil, err
	}
	train, _, err := s.Data.Load()
	if err != nil {
		return nil, nil, err
	}
	if s.Size < 1 || s.Size > train.N {
		return nil, nil, invalidf("size %d is outside [1, %d]", s.Size, train.N)
	}
	first := make([]int, s.Size)
	for i := range first {
		first[i] = i
	}
	base = train.Subset("audit base", first)
	if canary != nil {
		image = canary(s.Data.Arch)
	}
	f, ok := s.Data.Arch.FrontEnd()
	if !ok {
		return base, image, nil
	}
	if base, err = features.Compute(ctx, f, base, nil); err != nil || canary == nil {
		return base, nil, err
	}
	a := s.Data.Arch
	z, err := features.Compute(ctx, f, &data.Dataset{Name: "canary", X: image, Y: []uint8{0}, N: 1, C: a.C, H: a.H, W: a.W, Classes: a.Classes}, nil)
	if err != nil {
		return nil, nil, err
	}
	return base, z.X, nil
}

// Params describes s's audit for its trial file's header (audit.Config's
// Protocol): Protocol, Delta, Confidence and every field its protocol's
// trials depend on (audit.Game.Fields), by their JSON names, nested fields
// joined by dots (e.g. "Repetitions.gamma"), numbers in Go's shortest
// form; for an audit on real data (natural; tuner with Data) also the data
// (dataset name, directory, nominal size, subset) and the network. The seed and the trial count are added by audit.Run. An unknown
// protocol is an error.
func (s AuditSpec) Params() ([]audit.Param, error) {
	g, ok := audit.Lookup(s.Protocol)
	if !ok {
		return nil, fmt.Errorf("unknown audit protocol %q (want %s)", s.Protocol, audit.Either(nil))
	}
	if name := nonFinite(reflect.ValueOf(s), ""); name != "" {
		return nil, fmt.Errorf("%s must be a finite number", name)
	}
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	all := map[string]any{}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if err := dec.Decode(&all); err != nil {
		return nil, err
	}
	keep := map[string]any{}
	for _, f := range append([]string{"Protocol", "Delta", "Confidence"}, g.Fields...) {
		keep[f] = all[f]
	}
	if g.OnData(s.Data.Load != nil) {
		b, err := json.Marshal(struct {
			Data dataRef
			Arch model.Arch
		}{s.Data.ref().withoutDigest(), s.Data.Arch})
		if err != nil {
			return nil, err
		}
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return nil, err
		}
		keep["Data"], keep["Arch"] = m["Data"], m["Arch"]
	}
	var out []audit.Param
	flatten(&out, "", keep)
	// Protocol first: the header reads as a description of the audit.
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key == "Protocol" && out[j].Key != "Protocol" })
	return out, nil
}

// nonFinite returns the dotted name of the first NaN or infinite float in
// v's exported fields (structs followed), "" when there is none.
func nonFinite(v reflect.Value, prefix string) string {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return prefix
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name := f.Name
			if prefix != "" {
				name = prefix + "." + name
			}
			if n := nonFinite(v.Field(i), name); n != "" {
				return n
			}
		}
	}
	return ""
}

// flatten appends v's leaves to out, keys sorted and joined by dots.
func flatten(out *[]audit.Param, prefix string, v any) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			key := k
			if prefix != "" {
				key = prefix + "." + k
			}
			flatten(out, key, v[k])
		}
	case []any:
		for i, e := range v {
			flatten(out, fmt.Sprintf("%s.%d", prefix, i), e)
		}
	case nil:
		*out = append(*out, audit.Param{Key: prefix, Value: "null"})
	default:
		*out = append(*out, audit.Param{Key: prefix, Value: fmt.Sprint(v)})
	}
}

// noiseMultiplier is the audited runs' σ: NoiseMultiplier, or σ calibrated
// so that one run of arch is (BaseEpsilon, Delta)-DP.
func (s AuditSpec) noiseMultiplier(ctx context.Context, arch model.Arch) (float64, error) {
	if s.BaseEpsilon == 0 {
		return s.NoiseMultiplier, nil
	}
	return calibrateRun(ctx, s.BaseEpsilon, s.Delta, s.SamplingRate, s.Steps, arch)
}

// String describes the result for people.
func (r *AuditResult) String() string {
	return fmt.Sprintf("ε_L = %.4f (%.0f%% confidence, δ = %g, %d trials) against ε_U %v", r.EpsilonLower, 100*r.Confidence, r.Delta, r.Trials, r.EpsilonUpper)
}
