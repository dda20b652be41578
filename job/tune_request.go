package job

import (
	"path/filepath"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// TuneRequest is a tuning as a person asks for it (the flags of dptune
// tune, by whose names Given and the errors speak): Spec checks it and
// makes the TuneSpec, or with Resume the spec of the unfinished tuning to
// continue; VoteRequest turns it into a vote for a federated tuner.
type TuneRequest struct {
	// Tuner is a registered tuner's name; Space names the search space
	// ("": DefaultSpaceName of the data, without its clipping norm
	// dimension under automatic clipping).
	Tuner, Space string
	// Epsilon and Delta are the total budget; Epochs, BatchSize and
	// Momentum each run's (a built-in network's own standing for those not
	// given: RunDefaults).
	Epsilon, Delta    float64
	Epochs, BatchSize int
	Momentum          float64
	Clipping          ClippingSettings
	// RunsDist ("tnb" or "poisson"; "": the tuner's default), Eta and
	// MeanRuns are the number of runs' distribution, for a tuner that
	// draws it.
	RunsDist      string
	Eta, MeanRuns float64
	// Validation ("private" or "public", with PublicValDir a directory of
	// the dataset's format), ValSize and ScoreNoise are the scores', for a
	// tuner that takes the trainer's scores.
	Validation, PublicValDir string
	ValSize                  int
	ScoreNoise               float64
	Accountant               string
	// Seed is the seed, when "seed" is given.
	Seed uint64
	// IncludeDefault, DefaultWeight, DefaultSettings and DefaultSource
	// (ParseTrainDefaults), SelectionShare and Subsample are the default
	// among the candidates and the selection share (TuneSpec's).
	IncludeDefault                 bool
	DefaultWeight                  float64
	DefaultSettings, DefaultSource string
	SelectionShare, Subsample      float64
	// Options are the registered tuners' own settings by name (a name two
	// tuners share is one); a missing one takes its default.
	Options map[string]any
	// Dataset and Model name the data as given (the public validation data
	// is read as the same dataset, for the same network), and Budget is the
	// curator's budget file ("" for none).
	Dataset, Model, Budget string
	// Out is the release directory; Diagnostics, if not "", the NOT
	// PRIVATE file of every run's candidate and score; Label says what the
	// tuning is, in the budget file.
	Out, Diagnostics, Label string
	// Transport secures a vote's connections (ServeVote; TuneVote makes
	// its own).
	Transport VoteTransport
	// Resume, if not "", continues the unfinished tuning whose Out was
	// Resume with the settings it kept, and takes no other setting.
	Resume string
	// Given are the settings given explicitly, by flag name.
	Given Given
}

// DiagnosticsNote is the TuneSpec.CallerNotes entry in which a
// TuneRequest's spec keeps its Diagnostics file for a resume.
const DiagnosticsNote = "diagnostics"

// Spec checks r and returns its TuneSpec, resumable (TuneSpec.Checkpoint
// in OUT-curator/tuning, the Diagnostics file kept in its CallerNotes),
// reading the data with data once the settings that need none are
// checked. With Resume it is instead the spec of the unfinished tuning
// Resume keeps (ResumeTuneSpec), and r is set as the first run's request
// was (Tuner, Dataset, Budget, Epsilon, Delta, Out and Diagnostics). A
// request is refused, before any work, with an error wrapping ErrInvalid
// that names the flag at fault: a setting the tuner does not take (another
// tuner's option, one its preset fixes, the runs' or scores' settings of a
// tuner that has none), values out of range, an unwritable Out or
// Diagnostics file, a resume given another setting.
func (r *TuneRequest) Spec(data func() (Source, error)) (TuneSpec, error) {
	if r.Resume != "" {
		return r.resume()
	}
	spec, err := r.spec(data)
	if err != nil {
		return spec, err
	}
	spec.Checkpoint = TuneCheckpointPath(r.Out)
	if r.Diagnostics != "" {
		abs, err := filepath.Abs(r.Diagnostics)
		if err != nil {
			return spec, invalidWrapf(err, "--diagnostics: %v", err)
		}
		spec.CallerNotes = map[string]string{DiagnosticsNote: abs}
	}
	return spec, nil
}

// resume is the spec of the unfinished tuning r.Resume keeps.
func (r *TuneRequest) resume() (TuneSpec, error) {
	for _, name := range r.Given.names() {
		if name != "resume" {
			return TuneSpec{}, invalidf("--resume takes no other flag: the tuning continues with the settings it kept (drop --%s)", name)
		}
	}
	spec, err := ResumeTuneSpec(r.Resume)
	if err != nil {
		return spec, err
	}
	r.Out = r.Resume
	if err := CheckOut(r.Out); err != nil {
		return spec, invalidWrapf(err, "--resume: %v", err)
	}
	r.Tuner, r.Dataset, r.Budget, r.Epsilon, r.Delta = spec.Tuner, spec.Data.Name, spec.Budget, spec.Epsilon, spec.Delta
	r.Diagnostics = spec.CallerNotes[DiagnosticsNote]
	return spec, nil
}

// spec is r's TuneSpec, not yet resumable.
func (r *TuneRequest) spec(data func() (Source, error)) (TuneSpec, error) {
	spec := TuneSpec{Tuner: r.Tuner, Epsilon: r.Epsilon, Delta: r.Delta, Epochs: r.Epochs, BatchSize: r.BatchSize, Momentum: r.Momentum,
		Validation: r.Validation, ValSize: r.ValSize, ScoreNoise: r.ScoreNoise, Budget: r.Budget, Label: r.Label,
		Diagnostics: r.Diagnostics != "", Accountant: r.Accountant}
	if r.Given["seed"] {
		seed := r.Seed
		spec.Seed = &seed
	}
	t, ok := TunerInfoOf(r.Tuner)
	if !ok {
		return spec, invalidf("unknown --tuner %q (want %s)", r.Tuner, tuning.NamesList(nil))
	}
	if err := r.tunerFlags(t, &spec); err != nil {
		return spec, err
	}
	var err error
	if spec.Clipping, spec.AutoClipGamma, err = r.Clipping.Resolve(r.Given, false); err != nil {
		return spec, err
	}
	if spec.Options, err = r.OptionValues(t); err != nil {
		return spec, err
	}
	if err := r.split(&spec); err != nil {
		return spec, err
	}
	if spec.Data, err = data(); err != nil {
		return spec, err
	}
	RunDefaults(spec.Data, r.Given, &spec.Epochs, &spec.BatchSize, &spec.Momentum)
	space := r.Space
	if space == "" {
		space = DefaultSpaceName(spec.Data)
	}
	if spec.Space, err = LoadSpace(space, r.Dataset); err != nil {
		return spec, err
	}
	if r.Space == "" && spec.Clipping == dpsgd.AutomaticClipping {
		// Automatic clipping has no clipping norm to choose; a space
		// given with one is refused by the job.
		spec.Space = WithoutClipNorm(spec.Space)
	}
	if err := CheckOutRoom(r.Out, spec.Data); err != nil {
		return spec, err
	}
	if r.Diagnostics != "" {
		if err := CheckFile(r.Diagnostics); err != nil {
			return spec, invalidWrapf(err, "--diagnostics: %v", err)
		}
	}
	if !t.Uses.TrainerScores {
		spec.Validation = "private"
	} else if err := r.publicValidation(&spec); err != nil {
		return spec, err
	}
	if !t.Uses.Repetitions || t.Preset {
		return spec, nil // K is fixed by the tuner
	}
	return spec, r.repetitions(t, &spec)
}

// tunerFlags refuses the settings that tuner t does not take: the
// federated tuners' options, what a preset fixes (whose values spec then
// leaves to the preset), and the settings of the repetitions, the
// trainer's scores and the diagnostics when t uses none.
func (r *TuneRequest) tunerFlags(t TunerInfo, spec *TuneSpec) error {
	g := r.Given
	for _, u := range Tuners() {
		if !u.Federated {
			continue
		}
		for _, o := range u.Options {
			if g[o.Name] {
				return invalidf("--%s is not a --tuner %s option", o.Name, r.Tuner)
			}
		}
	}
	var notMine []string
	if t.Preset {
		// The preset fixes these (TuneSpec's zero values take it).
		for _, n := range []string{"eta", "mean-runs", "runs-dist", "val-size", "score-noise", "validation", "public-val-dir", "default-weight", "selection-share", "subsample"} {
			if g[n] {
				return invalidf("--%s is fixed by --tuner %s (%s)", n, r.Tuner, t.Summary)
			}
		}
		spec.ValSize, spec.ScoreNoise, spec.Validation = 0, 0, ""
	}
	if !t.Uses.Repetitions {
		notMine = append(notMine, "eta", "mean-runs", "runs-dist")
	}
	if !t.Uses.TrainerScores {
		notMine = append(notMine, "validation", "public-val-dir", "score-noise")
	}
	if !t.Uses.Diagnostics {
		notMine = append(notMine, "diagnostics")
	}
	for _, n := range notMine {
		if g[n] {
			return invalidf("--%s is not a --tuner %s option", n, r.Tuner)
		}
	}
	return nil
}

// OptionValues returns tuner t's own settings from r.Options, refusing
// another tuner's option that was given; a missing one takes its
// default, and a file option left empty names a file in the curator's
// directory beside Out (tuning.Option.CuratorFile).
func (r *TuneRequest) OptionValues(t TunerInfo) (map[string]any, error) {
	mine := map[string]bool{}
	for _, o := range t.Options {
		mine[o.Name] = true
	}
	for _, u := range Tuners() {
		for _, o := range u.Options {
			if !mine[o.Name] && r.Given[o.Name] {
				return nil, invalidf("--%s is a --tuner %s option", o.Name, optionOwner(o.Name))
			}
		}
	}
	v := map[string]any{}
	for _, o := range t.Options {
		v[o.Name] = o.Default
		if x, ok := r.Options[o.Name]; ok {
			v[o.Name] = x
		}
		if s, ok := v[o.Name].(string); ok && s == "" && o.CuratorFile != "" {
			v[o.Name] = filepath.Join(filepath.Clean(r.Out)+"-curator", o.CuratorFile)
		}
	}
	return v, nil
}

// optionOwner is the first registered tuner that declares the option
// called name.
func optionOwner(name string) string {
	for _, t := range Tuners() {
		for _, o := range t.Options {
			if o.Name == name {
				return t.Name
			}
		}
	}
	return ""
}

// split puts the default among the candidates and the selection share
// into spec.
func (r *TuneRequest) split(spec *TuneSpec) error {
	g := r.Given
	if !r.IncludeDefault {
		for _, n := range []string{"default-weight", "default-settings", "default-source"} {
			if g[n] {
				return invalidf("--%s needs --include-default", n)
			}
		}
	}
	spec.IncludeDefault = r.IncludeDefault
	if g["default-weight"] {
		// Checked here, where a given 0 is told from none (the job's 0
		// is random-stop's prior weight tuning.DefaultWeight).
		if err := checkDefaultWeight(spec.Tuner, r.DefaultWeight); err != nil {
			return err
		}
		spec.DefaultWeight = r.DefaultWeight
	}
	d, err := ParseTrainDefaults(r.DefaultSettings, r.DefaultSource)
	if err != nil {
		return err
	}
	spec.Default = d
	if g["selection-share"] {
		if r.SelectionShare == 0 {
			// 0 is the job's "no selection share".
			return invalidf("--selection-share 0 is outside (0, 1)")
		}
		spec.SelectionShare = r.SelectionShare
	}
	if g["subsample"] {
		if r.Subsample == 0 {
			// 0 is the job's "no subsample".
			return invalidf("--subsample 0 is outside (0, 1]")
		}
		spec.Subsample = r.Subsample
	}
	return nil
}

// checkDefaultWeight refuses a given default weight w for a tuner that
// draws no runs (grid and doubling train or score the default once, as one
// more candidate; a tuner that takes no default is refused by the job) and
// a w outside (0, 1): at 0 no run would train the default, at 1 every run
// would, and none a candidate of the space.
func checkDefaultWeight(tuner string, w float64) error {
	if t, ok := TunerInfoOf(tuner); ok && t.Uses.Default && !t.Uses.Repetitions {
		return invalidf("--default-weight is not a --tuner %s option: it draws no runs, so the default takes no weight (it is one more candidate, trained once)", tuner)
	}
	if !(w > 0 && w < 1) {
		return invalidf("--default-weight %v is outside (0, 1): it is the probability that each run trains the default (0: never, 1: every run, and no candidate of the space)", w)
	}
	return nil
}

// publicValidation checks the validation settings and, for public
// validation, reads where the public set is: the same dataset and network
// as the private data, in PublicValDir.
func (r *TuneRequest) publicValidation(spec *TuneSpec) error {
	g := r.Given
	switch {
	case r.Validation == "public" && r.PublicValDir == "":
		return invalidf("--validation public needs --public-val-dir DIR: public validation data you declare disjoint from the private training data")
	case r.Validation != "public" && g["public-val-dir"]:
		return invalidf("--public-val-dir needs --validation public")
	case r.Validation == "public" && (g["score-noise"] || g["val-size"]):
		return invalidf("--score-noise and --val-size apply to --validation private only")
	case r.Validation == "public":
		pub, err := Dataset(r.Dataset, r.PublicValDir)
		if err == nil && r.Model != "" {
			var spec model.Spec
			if spec, err = model.LoadSpec(r.Model); err != nil {
				err = invalid(err)
			} else {
				pub, err = pub.WithModel(spec)
			}
		}
		if err != nil {
			return err
		}
		spec.PublicVal = &pub
	}
	return nil
}

// repetitions sets the distribution of the number of runs K of tuner t:
// RunsDist (by default t's) with mean MeanRuns, and for tnb the shape Eta.
func (r *TuneRequest) repetitions(t TunerInfo, spec *TuneSpec) error {
	if r.RunsDist == "" {
		r.RunsDist = t.Uses.DefaultRuns
	}
	var err error
	switch r.RunsDist {
	case accounting.TNB:
		if spec.Repetitions, err = TNBWithMeanOf(r.Eta, r.MeanRuns); err != nil {
			return err
		}
	case accounting.Poisson:
		if r.Given["eta"] {
			return invalidf("--eta is the shape of --runs-dist tnb; a Poisson number of runs has none")
		}
		spec.Repetitions = accounting.PoissonRepetitions(r.MeanRuns)
		if err := spec.Repetitions.Check(); err != nil {
			return invalidf("--mean-runs %v: a Poisson number of runs needs a mean of at least 1", r.MeanRuns)
		}
	default:
		return invalidf("unknown --runs-dist %q (want tnb or poisson)", r.RunsDist)
	}
	return nil
}

// TunerInfoOf describes the registered tuner called name (Tuners).
func TunerInfoOf(name string) (TunerInfo, bool) {
	for _, t := range Tuners() {
		if t.Name == name {
			return t, true
		}
	}
	return TunerInfo{}, false
}
