package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DPHyPOTable1 is DP-HyPO's Table 1 (Wang et al. 2023, MNIST, ε = 15,
// geometric K, 200 runs per cell): γ, GP and Uniform accuracy.
var DPHyPOTable1 = [][3]float64{
	{0.001, 0.946, 0.943}, {0.002, 0.948, 0.945}, {0.003, 0.948, 0.945}, {0.005, 0.947, 0.944},
	{0.01, 0.943, 0.940}, {0.02, 0.937, 0.935}, {0.025, 0.934, 0.932}, {0.03, 0.932, 0.929},
}

func compareSection(w *strings.Builder, f found) ([]Verdict, error) {
	var r CompareReport
	if err := json.Unmarshal(f.raw, &r); err != nil {
		return nil, err
	}
	if r.CostSitting { // it times the tuners; it judges nothing
		costSection(w, &r)
		return nil, nil
	}
	with := ""
	if o := r.Settings.Options(); o != "" {
		with = ", with " + o
	}
	fmt.Fprintf(w, "## Every tuner at one total budget on %s%s (%s, n = %d; `dptune bench compare`)\n\nReal DP-SGD runs only (no cached landscape).%s Command: `%s`; %d CPUs, load average %s; wall time %.0f s (%d tunings reused from the cache); finished %s.\n\n",
		r.Settings.Dataset, with, r.Settings.Model, r.Settings.NominalSize, datasetNote(r.Settings.Dataset), r.Command, r.CPUs, strings.Join(r.LoadAvg, " → "), r.Wall, r.Cached, r.Finished)
	WriteCompareMarkdown(w, &r)
	fmt.Fprintln(w)
	// beside compares tuner a with tuner b at each budget where both ran,
	// paired by seed: the mean of the per-seed differences (both tunings of
	// a seed share its validation split) and its 95% interval.
	beside := func(a, av, b, bv string) (ours string, ahead, within, behind int) {
		var parts []string
		for _, eps := range sortedBudgets(r.Cells) {
			d, ci, n := r.paired(CompareEntry{Tuner: a, Variant: av}, CompareEntry{Tuner: b, Variant: bv}, eps)
			if n == 0 {
				continue
			}
			if n == 1 { // one seed: a difference, no interval
				parts = append(parts, fmt.Sprintf("ε = %g: %+.3f (1 seed)", eps, d))
			} else {
				parts = append(parts, fmt.Sprintf("ε = %g: %+.3f ± %.3f (%d seeds)", eps, d, ci, n))
			}
			switch {
			case d > ci:
				ahead++
			case d < -ci:
				behind++
			default:
				within++
			}
		}
		return strings.Join(parts, "; "), ahead, within, behind
	}
	var vs []Verdict
	for _, c := range compareClaims {
		ours, ahead, within, behind := beside(c.A.Tuner, c.A.Variant, c.B.Tuner, c.B.Variant)
		if ahead+within+behind == 0 {
			continue
		}
		v := Verdict{Paper: c.Paper, Result: c.Result, Published: c.Published, Ours: r.Settings.Dataset + ", " + c.A.Name() + " − " + c.B.Name() + " accuracy: " + ours}
		v.Outcome, v.Why = outcome(ahead, within, behind, c.Claim, c.Other)
		oneSeed(&v, len(r.Settings.Seeds))
		for _, x := range r.Infeasible {
			if c.Infeasible != "" && x.Tuner == c.A.Tuner {
				v.Why += fmt.Sprintf(c.Infeasible, x.Budget)
			}
		}
		vs = append(vs, v)
	}
	return vs, nil
}

// compareClaim is a paper's claim that entry A beats entry B at one total
// budget, judged on a comparison's cells. Claim and Other are the
// verdict's words for A ahead and for B; Infeasible, if not empty, formats
// a note for each budget A cannot meet.
type compareClaim struct {
	Paper, Result, Published string
	A, B                     CompareEntry
	Claim, Other             string
	Infeasible               string
}

// datasetNote labels results on the CIFAR-10 copy this project trains on,
// whose pixels went through JPEG (quality 75) before they were stored in
// the binary format: its accuracies are not comparable with published
// CIFAR-10 figures.
func datasetNote(dataset string) string {
	if dataset != "cifar10" {
		return ""
	}
	return " CIFAR-10 here is the JPEG-derived copy (pixels re-encoded at JPEG quality 75): its accuracies are **not comparable** with published CIFAR-10 figures; the tuners are compared with each other."
}

// oneSeed makes a verdict from a single seed "not comparable": it has no
// interval to judge a difference by.
func oneSeed(v *Verdict, seeds int) {
	if seeds < 2 {
		v.Outcome, v.Why = "not comparable", "one seed so far: no interval to judge the difference by (the run resumes from its cache)"
	}
}

// outcome turns a per-budget comparison into a verdict.
func outcome(ahead, within, behind int, claim, other string) (string, string) {
	n := ahead + within + behind
	switch {
	case ahead > n/2 && behind == 0:
		return "reproduced", fmt.Sprintf("%s beyond the 95%% intervals at %d of %d budgets", claim, ahead, n)
	case behind > 0:
		return "not reproduced", fmt.Sprintf("%s behind %s beyond the 95%% intervals at %d of %d budgets", strings.Fields(claim)[0], other, behind, n)
	case ahead > 0:
		return "partly reproduced", fmt.Sprintf("%s beyond the 95%% intervals at %d of %d budgets, within them at the other %d", claim, ahead, n, within)
	default:
		return "not reproduced", fmt.Sprintf("within the 95%% intervals at %d of %d budgets (%d ahead): too few seeds or too small a gap to tell", within, n, ahead)
	}
}

func persampleSection(w *strings.Builder, f found) ([]Verdict, error) {
	var r PerSampleReport
	if err := json.Unmarshal(f.raw, &r); err != nil {
		return nil, err
	}
	dataset, _, _ := strings.Cut(r.Dataset, "/")
	if dataset == "" {
		dataset = "mnist"
	}
	fmt.Fprintf(w, "## Per-sample gradients: %s (`dptune bench persample`)\n\nCommand: `dptune bench persample --dataset %s --model %s --json %s`; GOMAXPROCS %d, load average %s.\n\n",
		r.Arch, dataset, r.Arch, filepath.Base(f.path), r.GOMAXPROCS, strings.Join(r.LoadAvg[:], " → "))
	fmt.Fprint(w, "| batch | non-private ms/step | DP-SGD ms/step | DP / non-private | DP examples/s |\n|---|---|---|---|---|\n")
	for _, res := range r.Results {
		fmt.Fprintf(w, "| %d | %.2f | %.2f | %.2f× | %.0f |\n", res.BatchSize, res.NonPrivate.MsPerStep, res.DP.MsPerStep, res.DPOverNonPrivate, res.DP.ExamplesPerSecond)
	}
	// PyTorch's measurement of the same network on the same machine
	// (make bench-torch writes both).
	torch := filepath.Join(filepath.Dir(f.path), strings.TrimPrefix(filepath.Base(f.path), "dptune-"))
	b, err := os.ReadFile(torch)
	if err != nil || torch == f.path {
		fmt.Fprintln(w)
		return nil, nil
	}
	var t struct {
		Torch string `json:"torch"`
		Date  string `json:"date"`
		Bench map[string]json.RawMessage
	}
	if json.Unmarshal(b, &t) != nil {
		fmt.Fprintln(w)
		return nil, nil
	}
	ms := func(k string) float64 {
		var m struct {
			Median float64 `json:"median_ms"`
		}
		json.Unmarshal(t.Bench[k], &m)
		return m.Median
	}
	if len(r.Results) > 0 && ms("dp_hooks") > 0 {
		ours := r.Results[0]
		fmt.Fprintf(w, "\nPyTorch %s on the same machine (%s, %s; batch 256, median ms per step): non-private %.2f, DP-SGD with per-sample gradient hooks (Opacus's method) %.2f, naive per-example loop %.2f. dptune's DP-SGD step at batch %d is **%.1f× faster** than the hooks (%.2f ms).\n\n",
			t.Torch, filepath.Base(torch), t.Date, ms("nonprivate"), ms("dp_hooks"), ms("dp_naive"), ours.BatchSize, ms("dp_hooks")/ours.DP.MsPerStep, ours.DP.MsPerStep)
		if f := ms("dp_func"); f > 0 {
			fmt.Fprintf(w, "With torch.func's vmap(grad) per-sample gradients PyTorch's DP-SGD step takes %.2f ms: dptune is **%.1f× faster** than that path.\n\n", f, f/ours.DP.MsPerStep)
		}
	}
	return nil, nil
}

func tunersSection(w *strings.Builder, f found) ([]Verdict, error) {
	var r struct {
		Dataset    string         `json:"dataset"`
		Epsilon    float64        `json:"epsilon"`
		Candidates int            `json:"candidates"`
		Epochs     int            `json:"landscape_epochs"`
		Seeds      int            `json:"landscape_seeds"`
		Repeats    int            `json:"repeats"`
		ScoreNoise float64        `json:"score_noise"`
		Cells      []TunerSimCell `json:"cells"`
		// Written since the landscapes name their network.
		Network   string   `json:"network"`
		Command   string   `json:"command"`
		BatchSize int      `json:"batch_size"`
		Landscape float64  `json:"landscape_seconds"`
		CPUs      int      `json:"cpus"`
		Load      []string `json:"load_avg"`
		Wall      float64  `json:"wall_seconds"`
		Done      string   `json:"finished"`
	}
	if err := json.Unmarshal(f.raw, &r); err != nil {
		return nil, err
	}
	network, model := "the dataset's default network", ""
	if r.Network != "" {
		network, model = "`"+r.Network+"`", " --model "+r.Network
	}
	command := "`" + r.Command + "`"
	if r.Command == "" { // written before tuners.json kept its command line
		command = fmt.Sprintf("`dptune bench tuners%s --epsilon %g --repeats %d --seeds %d --epochs %d` (its subgrid's strides were not recorded)", model, r.Epsilon, r.Repeats, r.Seeds, r.Epochs)
	}
	fmt.Fprintf(w, "## DP-HyPO's semi-real simulation (`dptune bench tuners`) — SIMULATION MODE\n\nA separate, labelled mode: each tuner visits a cached landscape of real DP-SGD test accuracies (%d candidates of %s on %s, %d seed(s) × %d epoch(s) per point) plus N(0, %g²) score noise; it is never mixed with the real runs above. Command: %s.",
		r.Candidates, r.Dataset, network, r.Seeds, r.Epochs, r.ScoreNoise, command)
	if r.CPUs > 0 {
		fmt.Fprintf(w, " Batch size %d. The landscapes' runs took %.1f h of wall time in all (summed over the sessions that built them); the last invocation %.0f s on %d CPUs, load average %s; finished %s.",
			r.BatchSize, r.Landscape/3600, r.Wall, r.CPUs, strings.Join(r.Load, " → "), r.Done)
	}
	fmt.Fprint(w, "\n\n")
	paired := len(r.Cells) > 0 && r.Cells[0].DifferenceStdErr > 0
	if paired {
		fmt.Fprint(w, "GP − Uniform is paired by repeat: both arms of a repeat draw from the same seed. ")
	} else {
		fmt.Fprint(w, "GP − Uniform's 2 s.e. treat the arms as independent (this tuners.json predates the paired difference; a rerun pairs them by repeat). ")
	}
	fmt.Fprint(w, "Each method's base σ is calibrated once, at the reference γ (0.01 by default), and kept at every γ: at a larger γ (fewer expected runs) a tuning spends less than ε.\n\n")
	fmt.Fprint(w, "| γ | paper GP | paper Uniform | our GP | our Uniform | our GP − Uniform ± 2 s.e. |\n|---|---|---|---|---|---|\n")
	ahead, n := 0, 0
	var diffs []string
	for _, c := range r.Cells {
		pg, pu := "–", "–"
		for _, p := range DPHyPOTable1 {
			if math.Abs(p[0]-c.Gamma) < 1e-12 {
				pg, pu = fmt.Sprintf("%.3f", p[1]), fmt.Sprintf("%.3f", p[2])
			}
		}
		d, se := c.GapAndStdErr()
		se2 := 2 * se
		fmt.Fprintf(w, "| %g | %s | %s | %.3f | %.3f | %+.3f ± %.3f |\n", c.Gamma, pg, pu, c.GPAccuracy, c.UniformAccuracy, d, se2)
		n++
		if d > se2 {
			ahead++
		}
		diffs = append(diffs, fmt.Sprintf("%+.3f", d))
	}
	fmt.Fprintln(w)
	v := Verdict{Paper: "Wang et al. 2023 (DP-HyPO)", Result: "Table 1: GP ahead of Uniform on MNIST at ε = 15 (semi-real simulation)",
		Published: "GP − Uniform = +0.002 to +0.003 at every γ (320 candidates, 200 runs per cell)",
		Ours:      fmt.Sprintf("GP − Uniform = %s (%d candidates, %d runs per cell)", strings.Join(diffs, ", "), r.Candidates, r.Repeats)}
	switch {
	case n > 0 && ahead > n/2:
		v.Outcome, v.Why = "reproduced", fmt.Sprintf("GP ahead beyond 2 s.e. at %d of %d γ", ahead, n)
	case r.Candidates >= 320 && r.Seeds >= 5 && r.Epochs >= 10:
		v.Outcome = "not reproduced"
		v.Why = fmt.Sprintf("GP ahead beyond 2 s.e. at %d of %d γ at the paper's scale (%d candidates, %d landscape runs of %d epochs per point, on %s rather than the paper's CNN); %s",
			ahead, n, r.Candidates, r.Seeds, r.Epochs, network, pooledGap(r.Cells, r.Repeats))
	default:
		v.Outcome = "not reproduced"
		v.Why = fmt.Sprintf("GP ahead beyond 2 s.e. at %d of %d γ; at reduced scale (%d candidates, %d landscape seed(s) of %d epoch(s)) the paper's 0.3-point gap is below our error bars. "+
			"The paper's scale — 320 points × 5 runs of 10 epochs × 2 noise multipliers — is 3,200 runs: ≈ 30 hours of opacus-mnist on 2 cores (2,344 steps at 14.7 ms), ≈ 7 hours of the ScatterNet + group norm network (`make tuners-mnist`, about 8 s a run), not finished", ahead, n, r.Candidates, r.Seeds, r.Epochs)
	}
	return []Verdict{v}, nil
}

// pooledGap explains a Table 1 that does not show GP ahead: the mean of
// GP − Uniform over the γ with its 2 s.e. (the cells' repeats are
// independent), and how that and each cell's 2 s.e. compare with the
// paper's smallest gap, with the tunings per cell a cell's median 2 s.e.
// would need to fall below it (s.e. ∝ 1/√repeats).
func pooledGap(cells []TunerSimCell, repeats int) string {
	if len(cells) == 0 || repeats <= 0 {
		return "no cells"
	}
	dphypoGap := math.Inf(1) // the smallest GP − Uniform of the paper's table
	for _, p := range DPHyPOTable1 {
		dphypoGap = math.Min(dphypoGap, p[1]-p[2])
	}
	dphypoGap = math.Round(dphypoGap*1000) / 1000 // the table's three decimals
	var sum, v float64
	half := make([]float64, len(cells))
	for i, c := range cells {
		d, se := c.GapAndStdErr()
		sum += d
		v += se * se
		half[i] = 2 * se
	}
	n := float64(len(cells))
	mean, se2 := sum/n, 2*math.Sqrt(v)/n
	slices.Sort(half)
	med := half[len(half)/2]
	s := fmt.Sprintf("averaged over the %d γ, GP − Uniform = %+.4f ± %.4f (2 s.e.), ", len(cells), mean, se2)
	if mean+se2 < dphypoGap {
		s += fmt.Sprintf("below the paper's smallest gap (+%.3f): on this landscape GP's advantage is absent, not hidden by noise", dphypoGap)
	} else {
		s += fmt.Sprintf("which does not rule out the paper's +%.3f", dphypoGap)
	}
	s += fmt.Sprintf(". Each γ's 2 s.e. at %d tunings is %.3f–%.3f; a cell would need about %.0f tunings for its median 2 s.e. (%.4f) to fall below +%.3f",
		repeats, half[0], half[len(half)-1], math.Ceil(float64(repeats)*(med/dphypoGap)*(med/dphypoGap)), med, dphypoGap)
	return s
}

func auditSection(w *strings.Builder, f found) ([]Verdict, error) {
	var r struct {
		Delta   float64      `json:"delta"`
		Steps   int          `json:"steps"`
		Trials  int          `json:"reduced_trials"`
		DTrials int          `json:"dpsgd_trials"`
		DSteps  int          `json:"dpsgd_steps"`
		Figure6 []AuditPanel `json:"figure6"`
		Tables  *AuditTables `json:"tables"`
		CPUs    int          `json:"cpus"`
		Load    []string     `json:"load_avg"`
		Wall    float64      `json:"wall_seconds"`
		Done    string       `json:"finished"`
	}
	if err := json.Unmarshal(f.raw, &r); err != nil {
		return nil, err
	}
	var verdicts []Verdict
	if t := r.Tables; t != nil {
		machine := fmt.Sprintf("%d CPUs, load average %s; wall time of the whole benchmark %.0f s; finished %s", r.CPUs, strings.Join(r.Load, " → "), r.Wall, r.Done)
		verdicts = auditTables(w, r.DTrials, r.DSteps, machine, t)
	}
	fmt.Fprintf(w, "## Xiang et al.'s audit of random-stop tuning (`dptune bench audit`)\n\nCommand: `dptune bench audit --trials %d --dpsgd-trials %d --dpsgd-steps %d`. δ = %g, N = %d DP-SGD iterations per base run.\n\n", r.Trials, r.DTrials, r.DSteps, r.Delta, r.Steps)
	fmt.Fprint(w, "| τ | K | ε_B | ε_U-P (generic) | ε_U-G | ε_U-O | ε_L (audit) |\n|---|---|---|---|---|---|---|\n")
	for _, p := range r.Figure6 {
		for _, a := range p.Points {
			fmt.Fprintf(w, "| %g | %s | %g | %.3f | %.3f | %.3f | %.3f |\n", p.Tau, p.Repetitions, a.BaseEpsilon, a.UpperP, a.UpperG, a.UpperO, a.Lower)
		}
	}
	fmt.Fprintln(w)
	v, ok := xiangFigure6Verdict(r.Figure6)
	if !ok {
		return verdicts, nil
	}
	return append(verdicts, v), nil
}

func voteSection(w *strings.Builder, f found) ([]Verdict, error) {
	var r struct {
		Sim    []VoteSimPoint  `json:"simulation"`
		Real   []VoteRealPoint `json:"real"`
		Config map[string]any  `json:"real_config"`
		Splits []VoteSplit     `json:"splits"`
		CPUs   int             `json:"cpus"`
		Load   string          `json:"load_avg"`
		Wall   float64         `json:"wall_seconds"`
	}
	if err := json.Unmarshal(f.raw, &r); err != nil {
		return nil, err
	}
	ds, _ := r.Config["dataset"].(string)
	if ds == "" {
		fmt.Fprintf(w, "## DP-Hype (`dptune bench vote`, simulation)\n\nCommand: `dptune bench vote --sim-only`; %d CPUs, load average %s, wall time %.0f s.\n\n", r.CPUs, r.Load, r.Wall)
	} else {
		model, _ := r.Config["model"].(string)
		subset, _ := r.Config["subset"].(float64)
		size := "all training examples"
		if subset > 0 {
			size = fmt.Sprintf("a public subset of %.0f training examples", subset)
		}
		fmt.Fprintf(w, "## DP-Hype (`dptune bench vote`, %s, %s)\n\nCommand: `dptune bench vote --dataset %s --model %s`, %s; %d CPUs, load average %s, wall time %.0f s%s. Client-level guarantees on a split among clients: never comparable row by row with the central tuners.%s\n\n",
			ds, model, ds, model, size, r.CPUs, r.Load, r.Wall, voteTrainingTime(r.Splits), datasetNote(ds))
	}
	if len(r.Real) > 0 {
		fmt.Fprint(w, "The noiseless winner is the candidate the clients' votes choose summed without noise: what DP-Hype tends to as ε grows.\n\n")
		fmt.Fprint(w, "| setting | clients | α | final training | ε | Opt | RandGuess | noiseless winner | DP-Hype ± 95% |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, p := range r.Real {
			fmt.Fprintf(w, "| %s | %d | %g | %s | %g | %.3f | %.3f | %.3f | %.3f ± %.3f |\n", p.Setting, p.Clients, p.Alpha, p.FinalTraining, p.Epsilon, p.Opt, p.RandGuess, p.Noiseless, p.DPHype, p.CI95)
		}
		fmt.Fprintln(w)
		return []Verdict{voteRealVerdict(ds, r.Real)}, nil
	}
	v, ok := dpHypeFigure2aVerdict(r.Sim)
	if !ok {
		return nil, nil
	}
	return []Verdict{v}, nil
}

// voteTrainingTime says how long the settings' training took in all, as
// their caches recorded it ("" when none did).
func voteTrainingTime(splits []VoteSplit) string {
	var sec float64
	timed := 0
	for _, sp := range splits {
		if sp.TrainingSeconds != nil {
			sec += *sp.TrainingSeconds
			timed++
		}
	}
	switch {
	case timed == 0:
		return ""
	case timed < len(splits):
		return fmt.Sprintf(" (the training of %d of %d settings took %.0f s, summed over the runs that filled their caches; the others' was not timed)", timed, len(splits), sec)
	}
	return fmt.Sprintf(" (the training of its %d settings took %.0f s, summed over the runs that filled their caches)", len(splits), sec)
}

// voteFollowsOpt is the share of the gap between RandGuess and Opt that
// DP-Hype's winner must recover at a point for it to "closely follow" Opt,
// as DP-Hype's Figures 5 and 6 describe.
const voteFollowsOpt = 0.8

// voteRealVerdict judges DP-Hype's Figures 5 and 6 on ds: at the points of
// the non-private figures with the vote's ε ≥ 1, DP-Hype recovers at least
// voteFollowsOpt of the gap from RandGuess to Opt at three points in four
// or more ("closely follows it across most settings").
func voteRealVerdict(ds string, pts []VoteRealPoint) Verdict {
	good, n := 0, 0
	var worst VoteRealPoint
	worstShare := math.Inf(1)
	for _, p := range pts {
		if p.FinalTraining != "non-private" || p.Epsilon < 1 || p.Opt <= p.RandGuess {
			continue
		}
		n++
		share := (p.DPHype - p.RandGuess) / (p.Opt - p.RandGuess)
		if share >= voteFollowsOpt {
			good++
		}
		if share < worstShare {
			worstShare, worst = share, p
		}
	}
	v := Verdict{Paper: "DP-Hype", Result: "Figures 5–6 (" + ds + ", IID and Dirichlet splits): DP-Hype closely follows Opt, far above RandGuess",
		Published: "DP-Hype closely follows Opt across most settings; the trade-off is sharper in non-IID settings"}
	if n == 0 {
		v.Ours, v.Outcome, v.Why = "no point with ε ≥ 1 and Opt above RandGuess", "not comparable", "the run has no point the claim covers"
		return v
	}
	v.Ours = fmt.Sprintf("%d of %d points at ε ≥ 1 recover ≥ %.0f%% of the RandGuess–Opt gap; worst %.0f%% (%s, n = %d, α = %g, ε = %g: %.3f against Opt %.3f)",
		good, n, 100*voteFollowsOpt, 100*worstShare, worst.Setting, worst.Clients, worst.Alpha, worst.Epsilon, worst.DPHype, worst.Opt)
	if 4*good >= 3*n {
		v.Outcome, v.Why = "reproduced", fmt.Sprintf("at three points in four or more with ε ≥ 1, DP-Hype's winner recovers ≥ %.0f%% of the gap from RandGuess to Opt", 100*voteFollowsOpt)
	} else {
		v.Outcome, v.Why = "not reproduced", fmt.Sprintf("only %d of %d points with ε ≥ 1 recover ≥ %.0f%% of the gap from RandGuess to Opt; by client count: %s",
			good, n, 100*voteFollowsOpt, voteByClients(pts))
	}
	return v
}

// voteByClients tallies, for each client count of pts, the points with
// ε ≥ 1 that recover the share voteFollowsOpt of the RandGuess–Opt gap,
// beside the vote noise's σ at the smallest such ε against the n votes
// each candidate can get: the measurement that explains a miss.
func voteByClients(pts []VoteRealPoint) string {
	type tally struct {
		good, n    int
		eps, sigma float64
		noiseless  float64 // the smallest share of the gap the noiseless winner recovers
	}
	by := map[int]*tally{}
	var counts []int
	for _, p := range pts {
		if p.FinalTraining != "non-private" || p.Epsilon < 1 || p.Opt <= p.RandGuess {
			continue
		}
		t := by[p.Clients]
		if t == nil {
			t = &tally{eps: math.Inf(1), noiseless: math.Inf(1)}
			by[p.Clients] = t
			counts = append(counts, p.Clients)
		}
		t.n++
		if (p.DPHype-p.RandGuess)/(p.Opt-p.RandGuess) >= voteFollowsOpt {
			t.good++
		}
		if p.Epsilon < t.eps {
			t.eps, t.sigma = p.Epsilon, p.NoiseStddev
		}
		t.noiseless = math.Min(t.noiseless, (p.Noiseless-p.RandGuess)/(p.Opt-p.RandGuess))
	}
	slices.Sort(counts)
	var parts []string
	for _, c := range counts {
		t := by[c]
		parts = append(parts, fmt.Sprintf("n = %d clients, %d of %d (vote noise σ = %.1f votes at ε = %g, against at most %d votes for a candidate; without noise the votes' winner recovers ≥ %.0f%% of the gap)",
			c, t.good, t.n, t.sigma, t.eps, c, 100*t.noiseless))
	}
	return strings.Join(parts, "; ")
}
