package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/runner"
	"github.com/dptune/dptune/tuning"
)

// CompareEntry is one central tuner of a comparison: the tuner as
// `dptune tune --tuner` names it, and for random-stop the distribution of
// its number of runs.
type CompareEntry struct {
	Tuner   string `json:"tuner"`             // a registered tuner (tuning.Names)
	Variant string `json:"variant,omitempty"` // random-stop: accounting.TNB or accounting.Poisson
}

// Name is the entry's row label: "randomstop (tnb)", or the tuner alone.
func (e CompareEntry) Name() string {
	if e.Variant == "" {
		return e.Tuner
	}
	return e.Tuner + " (" + e.Variant + ")"
}

// CompareEntries are the central tuners compared by default:
// tuning.Lineup.
var CompareEntries = lineupEntries()

func lineupEntries() []CompareEntry {
	var es []CompareEntry
	for _, l := range tuning.Lineup {
		es = append(es, CompareEntry{Tuner: l.Tuner, Variant: l.Runs})
	}
	return es
}

// CompareOption is one of a tuner's own settings that a comparison takes as
// a flag: its tuner, the option (its default is the comparison's) and a
// check of a value, nil for none.
type CompareOption struct {
	Tuner string
	tuning.Option
	Check func(v any) error
}

// compareTuner is what a comparison adds for one tuner: its options
// (CompareOptions), and the options of its spec at budget eps and seed
// given cfg.Options. Each registers from its own file.
type compareTuner struct {
	options []CompareOption
	spec    func(cfg CompareConfig, tuner string, eps float64, seed uint64) tuning.Values
}

var compareTuners []compareTuner

// CompareOptions are the tuners' own settings a comparison takes, in
// registration order.
func CompareOptions() []CompareOption {
	var out []CompareOption
	for _, t := range compareTuners {
		out = append(out, t.options...)
	}
	return out
}

// compareOption returns option name of cfg.Options, or its CompareOption
// default.
func compareOption[T any](cfg CompareConfig, name string) T {
	if v, ok := cfg.Options[name].(T); ok {
		return v
	}
	for _, o := range CompareOptions() {
		if v, ok := o.Default.(T); ok && o.Name == name {
			return v
		}
	}
	var zero T
	return zero
}

// CompareConfig is a comparison of the central private tuners at equal
// total example-level budgets (ε, δ) covering tuning and the released
// model: every tuner calibrates its own noise to each budget, and runs on
// the same data, space, validation split (per seed) and run settings.
type CompareConfig struct {
	Data    job.Source
	Space   tuning.Space
	Entries []CompareEntry // default CompareEntries
	Budgets []float64      // total ε in nats
	Delta   float64
	Seeds   []uint64 // one tuning per entry, budget and seed; fast seeded noise
	// Epochs, BatchSize and Momentum are each DP-SGD run's where the space
	// gives none (a partitioned tuner: the final run's; its part runs take
	// its own epochs option).
	Epochs, BatchSize int
	Momentum          float64
	// MeanRuns is E[K] of random-stop (TNB with η = 1, i.e. geometric, or
	// Poisson) and of GP (TNB, η = 1).
	MeanRuns float64
	// ValSize and ScoreNoise: every tuner holds out ValSize private
	// examples (a keyed split, the same per seed for every tuner) and
	// releases noisy counts on them (a partitioned tuner: Laplace-noised
	// counting queries instead).
	ValSize    int
	ScoreNoise float64
	// GridScoreNoise is grid's score noise multiplier: its |S| scores all
	// compose, so at the noise of the others they alone would exceed a
	// small budget (32 scores at 20 spend ε ≈ 1.4 at δ = 10⁻⁵).
	GridScoreNoise float64
	// Baselines adds the rows BaselineEntries name (the default run of
	// Default, and the not-private selection and oracle over every
	// candidate at the whole budget) at every budget and seed, and each
	// tuner's paired difference to the default (CompareReport.Versus).
	Baselines bool
	// Default are the default row's settings, with their source; nil: the
	// network's published settings on the dataset (job.NetworkDefaultsOn).
	Default *job.TrainDefaults
	// DefaultLabel, if not "", names the default row in the report
	// (CompareSettings.DefaultLabel); it changes no run.
	DefaultLabel string
	// Clipping, IncludeDefault (with DefaultWeight) and SelectionShare are
	// comparison-wide options, given to every tuner entry's job.TuneSpec
	// (compare_wide.go): every run's clipping rule (dpsgd.AutomaticClipping
	// with stability constant AutoClipGamma, 0 for dpsgd.DefaultAutoClipGamma;
	// the default row then trains with it too), the default settings
	// (Default, or the published ones) among the candidates with
	// random-stop's weight DefaultWeight (0: tuning.DefaultWeight), and a
	// share of ε for the selection. An entry whose tuner refuses one is
	// reported not run (CompareInfeasible.Refused), with the job's reason.
	Clipping       dpsgd.Clipping
	AutoClipGamma  float64
	IncludeDefault bool
	DefaultWeight  float64
	SelectionShare float64
	// Subsample, with SelectionShare, runs every selection on a Poisson
	// tuning subset of this ratio (job.TuneSpec.Subsample); 0: none.
	Subsample float64
	// ReferenceSeeds, if positive, runs the two not-private baselines
	// (every candidate at every budget) on the first ReferenceSeeds seeds
	// only; the default runs on every seed.
	ReferenceSeeds int
	// NoReferences leaves the two not-private baselines out on every seed
	// (the default row still runs).
	NoReferences bool
	// Options are the tuners' own settings by name: those a comparison
	// takes as flags (CompareOptions), and any other of a tuner's
	// options (tuning.Tuner.Options, e.g. the GP tuner's); a missing one
	// takes its default.
	Options tuning.Values
	// Runner runs the training runs (nil: runner.Local, one run per core,
	// each engine on its share of the cores).
	Runner runner.Runner
	// Dir holds compare.json and the cache of finished tunings
	// (Dir/runs/*.json), which a rerun with the same settings reuses.
	Dir string
	// CostSitting times every tuning in this sitting: it reads no cached
	// tuning or baseline (each runs here; what it finishes is still
	// cached), starts each partitioned tuning without its part-score cache
	// (that file under Dir/curator is removed first), and marks the
	// report so that `bench report` shows it as what each tuner costs, not
	// as a comparison.
	CostSitting bool
	// Progress, if not nil, receives a line per tuning started; RunProgress
	// the runs within it (curator-side: they show K).
	Progress    func(string)
	RunProgress func(run, runs int)
}

// CompareRow is one tuning: what it released and what it cost. Runs,
// TrainingEpochs and Seconds are the curator's (NOT PRIVATE: they reveal K).
type CompareRow struct {
	Tuner   string  `json:"tuner"`
	Variant string  `json:"variant,omitempty"`
	Budget  float64 `json:"budget_epsilon"`
	Seed    uint64  `json:"seed"`
	// TestAccuracy is the released model's; 0 when nothing was released
	// (Released false: Poisson K = 0, or every run diverged).
	TestAccuracy float64            `json:"test_accuracy"`
	Released     bool               `json:"released"`
	Selected     map[string]float64 `json:"selected,omitempty"`
	// Clipping, IncludesDefault and SelectionShare are the comparison-wide
	// options as the tuning's own report states them (absent when off);
	// EpsilonComponents its ledger's parts, where it reports them.
	Clipping          string                    `json:"clipping,omitempty"`
	IncludesDefault   bool                      `json:"includes_default,omitempty"`
	SelectionShare    float64                   `json:"selection_share,omitempty"`
	Subsample         float64                   `json:"subsample,omitempty"`
	EpsilonComponents []tuning.EpsilonComponent `json:"epsilon_components,omitempty"`
	// EpsilonRDP is the ledger's total ε by the RDP accountant (the one
	// every tuner is calibrated with); EpsilonPLD the PLD accountant's
	// where it counts every event (nil otherwise); EpsilonXiang Xiang et
	// al.'s Algorithm 3 for random-stop's DP-SGD runs and selection, an
	// APPROXIMATION without the private scores' noise (nil otherwise).
	EpsilonRDP      float64  `json:"epsilon_rdp"`
	EpsilonPLD      *float64 `json:"epsilon_pld,omitempty"`
	EpsilonXiang    *float64 `json:"epsilon_xiang_o_approximate,omitempty"`
	NoiseMultiplier float64  `json:"noise_multiplier"` // each run's σ (a partitioned tuner: the final run's)
	Runs            int      `json:"runs"`             // DP-SGD runs (a partitioned tuner: part runs + the final run)
	TrainingEpochs  float64  `json:"training_epochs"`  // passes over the full training set, all runs together
	Seconds         float64  `json:"seconds"`
	// PartsReused marks a partitioned tuning whose part scores came from an
	// earlier budget of the same seed (its Seconds leave them out).
	PartsReused bool `json:"parts_reused,omitempty"`
	// CPUSeconds is the user and system CPU time of this process during
	// the tuning (getrusage; a comparison runs one tuning at a time), nil
	// where it was not measured: a row cached by a dptune that did not
	// record it, or runs sent to another runner than this process's pool.
	CPUSeconds *float64 `json:"cpu_seconds,omitempty"`
	// A partitioned tuning's cost in two phases, nil where not measured:
	// its part runs (from the tuning's start, loading the data included,
	// to the last part run's end; nil when every part score came from the
	// cache) and its final run (the rest: the search, the final DP-SGD run
	// and its test).
	PartSeconds     *float64 `json:"part_runs_seconds,omitempty"`
	PartCPUSeconds  *float64 `json:"part_runs_cpu_seconds,omitempty"`
	FinalSeconds    *float64 `json:"final_run_seconds,omitempty"`
	FinalCPUSeconds *float64 `json:"final_run_cpu_seconds,omitempty"`
}

// CompareCell is one entry at one budget over the seeds: the mean test
// accuracy with its 95% Student-t interval half-width.
type CompareCell struct {
	Tuner          string  `json:"tuner"`
	Variant        string  `json:"variant,omitempty"`
	Budget         float64 `json:"budget_epsilon"`
	Seeds          int     `json:"seeds"`
	Accuracy       float64 `json:"mean_test_accuracy"`
	CI95           float64 `json:"ci95"`
	Released       int     `json:"released"`
	EpsilonRDP     float64 `json:"mean_epsilon_rdp"`
	EpsilonPLD     float64 `json:"mean_epsilon_pld,omitempty"`
	EpsilonXiang   float64 `json:"mean_epsilon_xiang_o_approximate,omitempty"`
	Noise          float64 `json:"mean_noise_multiplier"`
	Runs           float64 `json:"mean_runs"`
	TrainingEpochs float64 `json:"mean_training_epochs"`
	Seconds        float64 `json:"mean_seconds"`
}

// CompareSettings are the public settings a comparison ran with.
type CompareSettings struct {
	Dataset     string `json:"dataset"`
	NominalSize int    `json:"nominal_size"`
	// TrainSubset is the fixed subset of the training set every run used
	// (job.Source.WithSubset), nil for the full set.
	TrainSubset *job.Subset    `json:"train_subset,omitempty"`
	Model       string         `json:"model"`
	Space       string         `json:"space"`
	Candidates  int            `json:"candidates"`
	SpaceDims   []tuning.Dim   `json:"space_dims"`
	Entries     []CompareEntry `json:"entries"`
	Budgets     []float64      `json:"budgets"`
	Delta       float64        `json:"delta"`
	Seeds       []uint64       `json:"seeds"`
	Epochs      int            `json:"epochs"`
	BatchSize   int            `json:"batch_size"`
	Momentum    float64        `json:"momentum,omitempty"`
	MeanRuns    float64        `json:"mean_runs"`
	ValSize     int            `json:"val_size"`
	ScoreNoise  float64        `json:"score_noise"`
	GridScore   float64        `json:"grid_score_noise"`
	// Default are the default baseline's settings and their source; nil
	// without baselines.
	Default *job.TrainDefaults `json:"default_settings,omitempty"`
	// DefaultLabel names a default that is not the network's published
	// settings (e.g. "mis-set: η 8× too small") wherever the report names
	// the comparison (Options); it is in no fingerprint.
	DefaultLabel string `json:"default_label,omitempty"`
	// The comparison-wide options (CompareConfig), each absent when off,
	// so that a comparison without them fingerprints as before them:
	// Clipping "automatic" with AutoClipGamma, IncludeDefault with the
	// settings put among the candidates (DefaultCandidate, as given: under
	// automatic clipping the job takes their η·C) and random-stop's
	// DefaultWeight, and SelectionShare.
	Clipping         string             `json:"clipping,omitempty"`
	AutoClipGamma    float64            `json:"auto_clip_gamma,omitempty"`
	IncludeDefault   bool               `json:"include_default,omitempty"`
	DefaultCandidate *job.TrainDefaults `json:"default_candidate,omitempty"`
	DefaultWeight    float64            `json:"default_weight,omitempty"`
	SelectionShare   float64            `json:"selection_share,omitempty"`
	Subsample        float64            `json:"subsample,omitempty"`
	// The tuners' own settings, each under its tuner's name (each
	// declared in its tuner's benchmark file).
	gpSettings
	tunerSettings
}

// CompareReport is compare.json.
type CompareReport struct {
	Settings CompareSettings `json:"settings"`
	Rows     []CompareRow    `json:"rows"`
	// Infeasible are the entries and budgets no noise can meet, and those
	// whose tuner refuses a comparison-wide option (Refused).
	Infeasible []CompareInfeasible `json:"infeasible,omitempty"`
	Cells      []CompareCell       `json:"cells"`
	// Versus is each private tuner's paired difference to the default
	// baseline, with its verdict; empty without baselines.
	Versus []CompareVersus `json:"versus_default,omitempty"`
	// Vote is DP-Hype's separate table (client-level guarantee, its own
	// split): nil unless run. VoteNotRun says why it was not, where it was
	// asked for but a comparison-wide option ruled it out.
	Vote       []VoteCompareCell `json:"vote,omitempty"`
	VoteNotRun string            `json:"vote_not_run,omitempty"`
	// CostSitting marks a comparison run to time the tuners
	// (CompareConfig.CostSitting): every tuning ran in this sitting.
	CostSitting bool     `json:"cost_sitting,omitempty"`
	Command     string   `json:"command,omitempty"`
	CPUs        int      `json:"cpus"`
	LoadAvg     []string `json:"load_avg"` // at the start and at the end
	Cached      int      `json:"tunings_from_cache"`
	Wall        float64  `json:"wall_seconds"`
	Finished    string   `json:"finished"`
}

// settings is cfg's public summary, which also fingerprints the cache.
func (cfg CompareConfig) settings() CompareSettings {
	s := CompareSettings{Dataset: cfg.Data.Name, NominalSize: cfg.Data.NominalN, TrainSubset: cfg.Data.Subset, Model: cfg.Data.Arch.Spec.Name, Space: cfg.Space.Name,
		Candidates: cfg.Space.Size(), SpaceDims: cfg.Space.Dims, Entries: cfg.Entries, Budgets: cfg.Budgets, Delta: cfg.Delta, Seeds: cfg.Seeds,
		Epochs: cfg.Epochs, BatchSize: cfg.BatchSize, Momentum: cfg.Momentum, MeanRuns: cfg.MeanRuns, ValSize: cfg.ValSize, ScoreNoise: cfg.ScoreNoise, GridScore: cfg.GridScoreNoise,
		gpSettings: cfg.gpSettings(), tunerSettings: cfg.tunerSettings()}
	cfg.wideSettings(&s)
	return s
}

// fingerprint identifies the settings one tuning depends on.
func (s CompareSettings) fingerprint(e CompareEntry) string {
	k := s
	k.Entries, k.Budgets, k.Seeds, k.Default, k.DefaultLabel = []CompareEntry{e}, nil, nil, nil, "" // DefaultCandidate stays: with the default among the candidates, a tuning depends on it
	b, _ := json.Marshal(k)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Compare runs every entry at every budget and seed (seed by seed, so an
// early stop leaves whole tables of the first seeds), reusing the tunings a
// previous call with the same settings finished (Dir/runs), and writes
// Dir/compare.json. Cancelled, it returns ctx's error; what finished stays
// cached.
func Compare(ctx context.Context, cfg CompareConfig) (*CompareReport, error) {
	if len(cfg.Entries) == 0 {
		cfg.Entries = CompareEntries
	}
	if len(cfg.Budgets) == 0 || len(cfg.Seeds) == 0 {
		return nil, fmt.Errorf("bench: a comparison needs budgets and seeds")
	}
	if cfg.Runner == nil {
		cfg.Runner = runner.Local{}
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "runs"), 0o755); err != nil {
		return nil, err
	}
	start := time.Now()
	infeasible, err := CheckCompare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	rep := &CompareReport{Settings: cfg.settings(), Infeasible: infeasible, CostSitting: cfg.CostSitting, CPUs: runtime.NumCPU(), LoadAvg: []string{LoadAvg()}}
	var def job.TrainDefaults
	if cfg.Baselines {
		if def, err = cfg.defaultSettings(); err != nil {
			return nil, err
		}
		rep.Settings.Default = &def
	}
	for si, seed := range cfg.Seeds {
		for _, eps := range cfg.Budgets {
			if cfg.Baselines {
				references := !cfg.NoReferences && (cfg.ReferenceSeeds <= 0 || si < cfg.ReferenceSeeds)
				rows, cached, err := rep.baselineRows(ctx, cfg, def, eps, seed, references)
				if err != nil {
					return nil, fmt.Errorf("bench: the baselines at ε = %g, seed %d: %w", eps, seed, err)
				}
				rep.Rows = append(rep.Rows, rows...)
				rep.Cached += cached
			}
			for _, e := range cfg.Entries {
				if rep.infeasible(e, eps) {
					continue
				}
				path := filepath.Join(cfg.Dir, "runs", fmt.Sprintf("%s-eps%s-seed%d.json", e.ID(), strconv.FormatFloat(eps, 'g', -1, 64), seed))
				fp := rep.Settings.fingerprint(e)
				if row, ok := readCompareRow(path, fp); ok && !cfg.CostSitting {
					rep.Rows = append(rep.Rows, rep.Settings.recountPartitioned(row))
					rep.Cached++
					continue
				}
				if cfg.Progress != nil {
					cfg.Progress(fmt.Sprintf("%s at ε = %g, seed %d", e.Name(), eps, seed))
				}
				row, err := compareOne(ctx, cfg, e, eps, seed)
				if err != nil {
					return nil, fmt.Errorf("bench: %s at ε = %g, seed %d: %w", e.Name(), eps, seed, err)
				}
				if err := writeCompareRow(path, fp, row); err != nil {
					return nil, err
				}
				rep.Rows = append(rep.Rows, row)
			}
		}
	}
	entries := cfg.Entries
	if cfg.Baselines {
		entries = append(slices.Clone(BaselineEntries), entries...)
		rep.Versus = rep.versusDefault(entries, cfg.Budgets)
	}
	rep.Cells = compareCells(entries, cfg.Budgets, rep.Rows)
	rep.LoadAvg = append(rep.LoadAvg, LoadAvg())
	rep.Wall = time.Since(start).Seconds()
	rep.Finished = time.Now().UTC().Format(time.RFC3339)
	return rep, nil
}

// Save writes rep as Dir/compare.json.
func (rep *CompareReport) Save(dir string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "compare.json"), append(b, '\n'), 0o644)
}

// WriteAll saves rep in dir — compare.json (Save), compare.md
// (WriteCompareMarkdown) and the plots of the dataset called name
// (PlotCompare, PlotVersus) — and returns compare.md's text.
func (rep *CompareReport) WriteAll(dir, name string) (string, error) {
	if err := rep.Save(dir); err != nil {
		return "", err
	}
	var md strings.Builder
	WriteCompareMarkdown(&md, rep)
	if err := os.WriteFile(filepath.Join(dir, "compare.md"), []byte(md.String()), 0o644); err != nil {
		return "", err
	}
	if err := PlotCompare(rep, filepath.Join(dir, "compare-"+name+".png")); err != nil {
		return md.String(), err
	}
	return md.String(), PlotVersus(rep, filepath.Join(dir, "versus-default-"+name+".png"))
}

// ID is the entry's name in flags and file names: "randomstop-tnb", or
// the tuner alone.
func (e CompareEntry) ID() string {
	if e.Variant == "" {
		return e.Tuner
	}
	return e.Tuner + "-" + e.Variant
}

// CompareInfeasible is an entry that cannot meet a budget: no noise
// multiplier brings its whole pipeline within (ε, δ).
type CompareInfeasible struct {
	Tuner   string  `json:"tuner"`
	Variant string  `json:"variant,omitempty"`
	Budget  float64 `json:"budget_epsilon"`
	Reason  string  `json:"reason"`
	// Refused marks an entry whose tuner refuses a comparison-wide option
	// (CompareConfig): not run at any budget.
	Refused bool `json:"refused,omitempty"`
}

// CheckCompare checks every tuning of cfg (each entry at each budget)
// before any work. It returns the entries that cannot meet a budget (they
// are reported, not run), or an error wrapping job.ErrInvalid when a
// setting is invalid or no entry meets any budget.
func CheckCompare(ctx context.Context, cfg CompareConfig) ([]CompareInfeasible, error) {
	if len(cfg.Entries) == 0 {
		cfg.Entries = CompareEntries
	}
	if err := cfg.checkWide(); err != nil {
		return nil, err
	}
	var out []CompareInfeasible
	for _, e := range cfg.Entries {
		for _, eps := range cfg.Budgets {
			reason, err := cfg.refusal(ctx, e, eps)
			if err != nil {
				return nil, err
			}
			if reason != "" {
				out = append(out, CompareInfeasible{Tuner: e.Tuner, Variant: e.Variant, Budget: eps, Reason: e.Name() + ": " + reason, Refused: true})
				continue
			}
			spec, err := compareSpec(cfg, e, eps, 0)
			if err == nil {
				_, err = job.CheckTune(ctx, spec)
			}
			switch {
			case err == nil:
			case errors.Is(err, accounting.ErrOutOfReach):
				out = append(out, CompareInfeasible{Tuner: e.Tuner, Variant: e.Variant, Budget: eps, Reason: e.Name() + ": " + err.Error()})
			default:
				return nil, fmt.Errorf("%s at ε = %g: %w", e.Name(), eps, err)
			}
		}
	}
	if len(out) == len(cfg.Entries)*len(cfg.Budgets) {
		return nil, fmt.Errorf("%w: no tuner runs at any of the budgets: %s", job.ErrInvalid, out[0].Reason)
	}
	return out, nil
}

// compareSpec is the tuning of entry e at total budget eps and seed. Every
// tuner gets the same options map (every compareTuner's) and reads its own;
// a tuner that trains every candidate once scores with GridScoreNoise.
func compareSpec(cfg CompareConfig, e CompareEntry, eps float64, seed uint64) (job.TuneSpec, error) {
	spec := job.TuneSpec{Data: cfg.Data, Tuner: e.Tuner, Space: cfg.Space, Epsilon: eps, Delta: cfg.Delta, Epochs: cfg.Epochs,
		BatchSize: cfg.BatchSize, Momentum: cfg.Momentum, Validation: "private", ValSize: cfg.ValSize, ScoreNoise: cfg.ScoreNoise, Seed: &seed,
		Runner: cfg.Runner, Diagnostics: true, Progress: cfg.RunProgress}
	tu, err := tuning.Lookup(e.Tuner)
	if err != nil {
		return spec, fmt.Errorf("%w: %v", job.ErrInvalid, err)
	}
	uses := tu.Uses()
	_, preset := tu.(tuning.Presetter)
	switch {
	case preset:
		// It fixes K and its own validation (job.TuneSpec's zero
		// values), and its default candidate is the default row's.
		spec.Validation, spec.ValSize, spec.ScoreNoise = "", 0, 0
		if d, err := cfg.defaultSettings(); err == nil {
			spec.Default = &d
		}
	case !uses.TrainerScores:
		spec.Validation = ""
	case !uses.Repetitions:
		spec.ScoreNoise = cfg.GridScoreNoise
	case e.Variant == accounting.Poisson:
		spec.Repetitions = accounting.PoissonRepetitions(cfg.MeanRuns)
	default:
		if spec.Repetitions, err = accounting.TNBWithMean(1, cfg.MeanRuns); err != nil {
			return spec, fmt.Errorf("%w: %v", job.ErrInvalid, err)
		}
	}
	spec.Options = tuning.Values{}
	for _, t := range compareTuners {
		maps.Copy(spec.Options, t.spec(cfg, e.Tuner, eps, seed))
	}
	cfg.applyWide(&spec, uses)
	return spec, nil
}

// compareOne runs one tuning through job.Tune.
func compareOne(ctx context.Context, cfg CompareConfig, e CompareEntry, eps float64, seed uint64) (CompareRow, error) {
	row := CompareRow{Tuner: e.Tuner, Variant: e.Variant, Budget: eps, Seed: seed}
	n := cfg.Space.Size()
	spec, err := compareSpec(cfg, e, eps, seed)
	if err != nil {
		return row, err
	}
	tu, _ := tuning.Lookup(e.Tuner)
	_, partitioned := tu.(tuning.Partitioned)
	if partitioned {
		// Its part scores' file, an option naming a curator's file.
		for _, o := range tu.Options() {
			if p, _ := spec.Options[o.Name].(string); o.CuratorFile != "" {
				if cfg.CostSitting && p != "" {
					if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
						return row, err
					}
				}
				_, statErr := os.Stat(p)
				row.PartsReused = statErr == nil
			}
		}
	}
	_, local := cfg.Runner.(runner.Local) // its runs are this process's: getrusage counts them
	start := startClock(local)
	// The last part run's end divides a partitioned tuning's cost: its
	// scorer reports each part run, one call at a time, and the calls are
	// over before job.Tune returns.
	var partsDone *clock
	if partitioned {
		progress := spec.Progress
		spec.Progress = func(done, total int) {
			if done == total {
				c := startClock(local)
				partsDone = &c
			}
			if progress != nil {
				progress(done, total)
			}
		}
	}
	rel, diag, err := job.Tune(ctx, spec)
	end := startClock(local)
	row.Seconds, row.CPUSeconds = start.until(end)
	if partitioned {
		if partsDone != nil { // the two phases share the tuning's end, so they add up to it
			row.PartSeconds, row.PartCPUSeconds = measured(start.until(*partsDone))
			row.FinalSeconds, row.FinalCPUSeconds = measured(partsDone.until(end))
		} else { // every part score came from the cache
			row.FinalSeconds, row.FinalCPUSeconds = measured(row.Seconds, row.CPUSeconds)
		}
	}
	if err != nil {
		return row, err
	}
	rowOptions(rel.Report, &row)
	row.EpsilonRDP = *rel.Epsilon
	if g, err := rel.Ledger.Spent(accounting.PLD{}, cfg.Delta); err == nil {
		row.EpsilonPLD = &g.Epsilon
	}
	switch r := rel.Report.(type) {
	case *job.TuneReport:
		row.NoiseMultiplier, row.Selected = r.BaseNoiseMultiplier, r.Selected
		if r.TestAccuracy != nil {
			row.TestAccuracy, row.Released = *r.TestAccuracy, true
		}
		row.Runs = len(diag.Runs)
		share := 1.0 // of the whole set each selection run passes over
		if r.Subsample != 0 {
			share = r.Subsample
		}
		for _, run := range diag.Runs {
			e, ok := run.Candidate.Values[tuning.Epochs]
			if !ok {
				e = float64(cfg.Epochs)
			}
			row.TrainingEpochs += share * e
		}
		if r.SelectionShare != 0 && r.FinalSteps > 0 {
			// With a selection share the released model is one more run:
			// the selected settings on the whole training set.
			e, ok := r.Selected[tuning.Epochs]
			if !ok {
				e = float64(cfg.Epochs)
			}
			row.Runs++
			row.TrainingEpochs += e
		}
		// The xiang-o accountant's ε beside the proved one, for a tuner that
		// takes it (its DP-SGD base is one run shape).
		if !r.PerCandidate && tu.Check(tuning.Spec{Space: cfg.Space, Repetitions: r.Repetitions, Accountant: tuning.XiangO, Validation: "public"}) == nil {
			if x, err := job.XiangEpsilon(r); err == nil {
				row.EpsilonXiang = &x
			}
		}
	case partitionedReport:
		var acc *float64
		row.NoiseMultiplier, row.Selected, acc = r.Outcome()
		if acc != nil {
			row.TestAccuracy, row.Released = *acc, true
		}
		row.Runs, row.TrainingEpochs = r.Cost(n)
	default:
		return row, fmt.Errorf("unexpected report %T", rel.Report)
	}
	return row, nil
}

// partitionedReport is a partitioned tuner's report, as a comparison reads
// it: what was released, and the runs it cost over n candidates.
type partitionedReport interface {
	Outcome() (sigma float64, selected map[string]float64, testAccuracy *float64)
	Cost(candidates int) (runs int, trainingEpochs float64)
}

type cachedRow struct {
	Fingerprint string     `json:"settings_sha256"`
	Row         CompareRow `json:"row"`
}

func readCompareRow(path, fp string) (CompareRow, bool) {
	b, err := fsx.ReadFile(path, maxReportInput)
	if err != nil {
		return CompareRow{}, false
	}
	var c cachedRow
	if json.Unmarshal(b, &c) != nil || c.Fingerprint != fp {
		return CompareRow{}, false
	}
	return c.Row, true
}

// writeCompareRow writes path whole (a temporary file renamed), so an
// interrupted write never leaves half a row.
func writeCompareRow(path, fp string, row CompareRow) error {
	b, err := json.MarshalIndent(cachedRow{fp, row}, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// compareCells averages the rows of each entry and budget.
func compareCells(entries []CompareEntry, budgets []float64, rows []CompareRow) []CompareCell {
	var cells []CompareCell
	for _, e := range entries {
		for _, eps := range budgets {
			c := CompareCell{Tuner: e.Tuner, Variant: e.Variant, Budget: eps}
			var acc, pld, xi []float64
			var timed, timedN float64
			for _, r := range rows {
				if r.Tuner != e.Tuner || r.Variant != e.Variant || r.Budget != eps {
					continue
				}
				acc = append(acc, r.TestAccuracy)
				if r.Released {
					c.Released++
				}
				c.EpsilonRDP += r.EpsilonRDP
				if r.EpsilonPLD != nil {
					pld = append(pld, *r.EpsilonPLD)
				}
				if r.EpsilonXiang != nil {
					xi = append(xi, *r.EpsilonXiang)
				}
				c.Noise += r.NoiseMultiplier
				c.Runs += float64(r.Runs)
				c.TrainingEpochs += r.TrainingEpochs
				if !r.PartsReused {
					timed += r.Seconds
					timedN++
				}
			}
			if len(acc) == 0 {
				continue
			}
			k := float64(len(acc))
			c.Seeds = len(acc)
			c.Accuracy, c.CI95 = meanCI95(acc)
			c.EpsilonRDP, c.Noise, c.Runs, c.TrainingEpochs = c.EpsilonRDP/k, c.Noise/k, c.Runs/k, c.TrainingEpochs/k
			if len(pld) == len(acc) {
				c.EpsilonPLD = stat.Mean(pld, nil)
			}
			if len(xi) == len(acc) {
				c.EpsilonXiang = stat.Mean(xi, nil)
			}
			if timedN > 0 {
				c.Seconds = timed / timedN
			}
			cells = append(cells, c)
		}
	}
	return cells
}

// paired is entry a's test accuracy less entry b's at budget eps, over
// the seeds where both ran: the mean of the per-seed differences, the
// half-width of its 95% Student-t interval (0 for one seed) and the
// number of seeds. A tuning that released nothing counts as accuracy 0,
// as in the cells.
func (r *CompareReport) paired(a, b CompareEntry, eps float64) (mean, half float64, n int) {
	acc := func(e CompareEntry) map[uint64]float64 {
		m := map[uint64]float64{}
		for _, row := range r.Rows {
			if row.Tuner == e.Tuner && row.Variant == e.Variant && row.Budget == eps {
				m[row.Seed] = row.TestAccuracy
			}
		}
		return m
	}
	x, y := acc(a), acc(b)
	var d []float64
	for _, seed := range slices.Sorted(maps.Keys(x)) {
		if v, ok := y[seed]; ok {
			d = append(d, x[seed]-v)
		}
	}
	if len(d) == 0 {
		return 0, 0, 0
	}
	mean, half = meanCI95(d)
	return mean, half, len(d)
}

// meanCI95 is the mean of x and the half-width of its 95% Student-t
// interval (0 for a single value).
func meanCI95(x []float64) (mean, half float64) {
	mean = stat.Mean(x, nil)
	if len(x) < 2 {
		return mean, 0
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(x) - 1)}.Quantile(0.975)
	return mean, t * stat.StdDev(x, nil) / math.Sqrt(float64(len(x)))
}

// ReadCompare reads a compare.json.
func ReadCompare(path string) (*CompareReport, error) {
	b, err := fsx.ReadFile(path, maxReportInput)
	if err != nil {
		return nil, err
	}
	var r CompareReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Cells) == 0 {
		return nil, errors.New(path + ": no comparison cells")
	}
	return &r, nil
}

// sortedBudgets returns the distinct budgets of cells in increasing order.
func sortedBudgets(cells []CompareCell) []float64 {
	var b []float64
	for _, c := range cells {
		if !slices.Contains(b, c.Budget) {
			b = append(b, c.Budget)
		}
	}
	slices.Sort(b)
	return b
}
