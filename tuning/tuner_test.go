package tuning

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/accounting"
)

// landscape is a synthetic Trainer: a smooth score surface over a 6×6 grid
// with its maximum at one candidate, plus small noise.
type landscape struct {
	space Space
	noise float64
}

func (l landscape) score(i int) float64 {
	x := l.space.Coords(i)
	return 0.9 - (x[0]-0.6)*(x[0]-0.6) - (x[1]-0.4)*(x[1]-0.4)
}

func (l landscape) best() int {
	b := 0
	for i := 1; i < l.space.Size(); i++ {
		if l.score(i) > l.score(b) {
			b = i
		}
	}
	return b
}

func (landscape) Event() accounting.Event {
	return accounting.Gaussian{NoiseMultiplier: 10, Sensitivity: 1}
}

func (l landscape) Train(_ context.Context, c Candidate, seed *uint64) (Run, error) {
	return Run{Score: l.score(c.Index) + l.noise*randsrc.New(seed, "score").NormFloat64()}, nil
}

func synthetic() landscape {
	return landscape{space: Space{Name: "syn", Dims: []Dim{
		{Name: LearningRate, Values: LogGrid(0.01, 2, 6), Log: true},
		{Name: ClipNorm, Values: LinearGrid(0.5, 0.5, 6)}}}, noise: 0.002}
}

// With a large budget (about 150 runs) both tuners release the best
// candidate of the landscape in nearly every seed.
func TestTunersFindTheBest(t *testing.T) {
	l := synthetic()
	rep, _ := accounting.TNBWithMean(5, 150) // concentrated around its mean
	for _, name := range []string{"randomstop", "gp"} {
		found := 0
		for seed := uint64(0); seed < 20; seed++ {
			cfg := Config{Space: l.space, Trainer: l, Repetitions: rep, Seed: &seed}
			var res Result
			var err error
			if name == "gp" {
				res, err = GPTune(context.Background(), cfg, DefaultGPOptions())
			} else {
				res, err = RandomStop(context.Background(), cfg)
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Selected.Index == l.best() {
				found++
			}
		}
		if found < 18 {
			t.Errorf("%s found the best candidate in %d of 20 seeds", name, found)
		}
	}
}

// The result carries no K and no other run's score unless diagnostics are
// asked for, and its ledger is the theorem's event: its RDP ε equals the
// accountant's for RepeatAndSelect / AdaptiveRepeatAndSelect of the
// trainer's event.
func TestTunerReleaseAndLedger(t *testing.T) {
	l := synthetic()
	rep := accounting.TNBRepetitions(1, 0.1)
	seed := uint64(4)
	cfg := Config{Space: l.space, Trainer: l, Repetitions: rep, Seed: &seed}
	res, err := RandomStop(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Diagnostics != nil {
		t.Fatal("diagnostics without asking")
	}
	b, _ := json.Marshal(struct {
		Selected *Candidate
		Score    float64
		Ledger   accounting.Ledger
	}{res.Selected, res.Score, res.Ledger})
	for _, leak := range []string{`"k"`, `"K"`, "runs\":", "diagnostics"} {
		if strings.Contains(string(b), leak) {
			t.Errorf("release contains %s: %s", leak, b)
		}
	}
	got, err := res.Ledger.Spent(accounting.RDP{}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := accounting.RDP{}.Epsilon(accounting.RepeatAndSelect{Event: l.Event(), Repetitions: rep}, 1e-5)
	if got.Epsilon != want.Epsilon || len(res.Ledger.Entries) != 1 {
		t.Errorf("ledger ε %v, theorem %v", got.Epsilon, want.Epsilon)
	}
	res, err = GPTune(context.Background(), cfg, DefaultGPOptions())
	if err != nil {
		t.Fatal(err)
	}
	got, _ = res.Ledger.Spent(accounting.RDP{}, 1e-5)
	want, _ = accounting.RDP{}.Epsilon(accounting.AdaptiveRepeatAndSelect{Event: l.Event(), Repetitions: rep, MaxRatio: 2, MinRatio: 0.75}, 1e-5)
	if got.Epsilon != want.Epsilon {
		t.Errorf("GP ledger ε %v, Theorem 1 %v", got.Epsilon, want.Epsilon)
	}
	cfg.Diagnostics = true
	res, _ = RandomStop(context.Background(), cfg)
	if len(res.Diagnostics) == 0 {
		t.Error("no diagnostics when asked")
	}
	if _, err := GPTune(context.Background(), Config{Space: l.space, Trainer: l, Repetitions: accounting.PoissonRepetitions(5)}, DefaultGPOptions()); err == nil {
		t.Error("GP with Poisson repetitions accepted")
	}
	if _, err := GPTune(context.Background(), cfg, GPOptions{MaxRatio: 0.9}); err == nil {
		t.Error("C < 1 accepted")
	}
}

// Calibrate meets the total budget with the random-stop and GP tuners'
// events, built here independently from the papers' theorems.
func TestCalibrate(t *testing.T) {
	base := func(s float64) accounting.Event { return accounting.DPSGD(s, 0.01, 300) }
	rep, _ := accounting.TNBWithMean(1, 10)
	def := DefaultGPOptions()
	for _, opt := range []*GPOptions{nil, &def} {
		name, spec := "randomstop", Spec{Repetitions: rep}
		if opt != nil {
			name, spec.Options = "gp", opt.Values()
		}
		tu, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		sigma, err := Calibrate(context.Background(), tu, spec, base, 8, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		var ev accounting.Event = accounting.RepeatAndSelect{Event: base(sigma), Repetitions: rep}
		if opt != nil {
			ev = accounting.AdaptiveRepeatAndSelect{Event: base(sigma), Repetitions: rep, MaxRatio: 2, MinRatio: 0.75}
		}
		g, _ := accounting.RDP{}.Epsilon(ev, 1e-5)
		if g.Epsilon > 8 || g.Epsilon < 7.99 || math.IsNaN(sigma) {
			t.Errorf("σ = %v gives ε = %v", sigma, g.Epsilon)
		}
	}
}

// Grid trains every candidate exactly once, releases the best by score, and
// charges the composition of all runs: n times one run's Gaussian ρ in zCDP
// terms, which the RDP accountant turns into the closed-form ε of a
// Gaussian of multiplier σ/√n.
func TestGridVisitsEveryCandidateOnce(t *testing.T) {
	l := synthetic()
	l.noise = 0
	seed := uint64(3)
	res, err := Grid(context.Background(), Config{Space: l.space, Trainer: l, Seed: &seed, Diagnostics: true})
	if err != nil {
		t.Fatal(err)
	}
	n := l.space.Size()
	if len(res.Diagnostics) != n {
		t.Fatalf("%d runs, want %d", len(res.Diagnostics), n)
	}
	for i, r := range res.Diagnostics {
		if r.Candidate.Index != i {
			t.Fatalf("run %d trained candidate %d", i, r.Candidate.Index)
		}
	}
	if res.Selected == nil || res.Selected.Index != l.best() {
		t.Fatalf("selected %v, want the landscape's best %d", res.Selected, l.best())
	}
	got, err := res.Ledger.Spent(accounting.RDP{}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	// One Gaussian of multiplier 10 composed n times is a Gaussian of
	// multiplier 10/√n.
	want, err := accounting.RDP{}.Epsilon(accounting.Gaussian{NoiseMultiplier: 10 / math.Sqrt(float64(n)), Sensitivity: 1}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got.Epsilon-want.Epsilon) > 1e-9*want.Epsilon {
		t.Fatalf("grid ε = %v, want %v (a Gaussian of multiplier σ/√n)", got.Epsilon, want.Epsilon)
	}
}
