package tuning

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// voteSpec is a vote of 5 clients over two learning rates, each option
// set, on a nominal 1000 examples.
func voteSpec() Spec {
	seed := uint64(3)
	return Spec{Space: Space{Name: "two", Dims: []Dim{{Name: LearningRate, Values: []float64{1e-3, 0.1}}}}, Delta: 1e-5, TrainN: 1000,
		BatchSize: 50, Seed: &seed, Options: Values{"clients": 5, "votes-per-client": 1, "vote-epsilon": 2.0, "dropout": 0.2,
			"split-alpha": 0.0, "local-epochs": 1, "final-training": federated.FinalDPSGD, "fedavg-rounds": 2, "clip-norm": 1.0,
			"colluding": 1, "round-timeout": time.Minute, "message-timeout": time.Second}}
}

// The vote is a registered Federated tuner whose options are the
// command line's vote flags with their defaults.
func TestVoteTunerRegistered(t *testing.T) {
	tu, err := Lookup("vote")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tu.(Federated); !ok {
		t.Fatal("the vote tuner is not Federated")
	}
	want := map[string]any{"clients": 10, "votes-per-client": 3, "vote-epsilon": 1.0, "dropout": 0.0, "split-alpha": 0.0,
		"local-epochs": 1, "final-training": "dp-sgd", "fedavg-rounds": 5, "clip-norm": 1.0, "colluding": 0,
		"round-timeout": federated.DefaultTrainingTimeout, "message-timeout": federated.DefaultMessageTimeout}
	opts := tu.Options()
	if len(opts) != len(want) {
		t.Errorf("%d options, want %d", len(opts), len(want))
	}
	for _, o := range opts {
		if d, ok := want[o.Name]; !ok || d != o.Default {
			t.Errorf("option %s default %#v, want %#v", o.Name, o.Default, d)
		}
	}
	if err := CheckOptions(tu, Spec{Options: Values{"round-timeout": 5}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an int round-timeout: %v", err)
	}
}

// Check refuses each impossible setting, from public facts alone, and an
// unchecked spec's Event is not private.
func TestVoteTunerCheck(t *testing.T) {
	tu, _ := Lookup("vote")
	if err := tu.Check(voteSpec()); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(*Spec){
		"delta":           func(s *Spec) { s.Delta = 0 },
		"vote ε":          func(s *Spec) { s.Options["vote-epsilon"] = 0.0 },
		"round deadline":  func(s *Spec) { s.Options["round-timeout"] = -time.Second },
		"batch":           func(s *Spec) { s.BatchSize = 0 },
		"rounds":          func(s *Spec) { s.Options["fedavg-rounds"] = 0 },
		"clip":            func(s *Spec) { s.Options["clip-norm"] = math.NaN() },
		"colluding":       func(s *Spec) { s.Options["colluding"] = 5 },
		"below threshold": func(s *Spec) { s.Options["dropout"] = 0.5 },
		"one client":      func(s *Spec) { s.Options["clients"] = 1; s.Options["colluding"] = 0 },
		"votes":           func(s *Spec) { s.Options["votes-per-client"] = 3 },
		"space":           func(s *Spec) { s.Space.Dims = nil },
	} {
		s := voteSpec()
		edit(&s)
		if err := tu.Check(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Check = %v, want ErrInvalid", name, err)
		}
		if _, ok := tu.Event(accounting.DPSGD(1, 0.1, 10), s).(accounting.NonPrivate); !ok {
			t.Errorf("%s: Event of a refused spec is not NonPrivate", name)
		}
	}
}

// Plan calibrates the final DP-SGD so that Event, given the planned final
// training, spends just under the total ε: the vote's own ε at the fewest
// survivors plus the training's, counted by RDP.
func TestVoteTunerPlanMeetsEpsilon(t *testing.T) {
	tu, _ := Lookup("vote")
	arch := model.MNIST
	s := voteSpec()
	j, err := tu.(Federated).Plan(context.Background(), s, 6, FederatedData{Dataset: "mnist", Arch: arch})
	if err != nil {
		t.Fatal(err)
	}
	if j.Clients != 5 || j.Threshold != 4 || j.Colluding != 1 || j.SplitSeed != 3 || j.NominalN != 1000 || j.LocalTimeout != 48*time.Second {
		t.Errorf("job %+v", j)
	}
	// q = 50 / (1000/5 clients), so 4 steps per round.
	if j.Final.SamplingRate != 0.25 || j.Final.StepsPerRound != 4 || j.Final.Rounds != 2 {
		t.Errorf("final training %+v", j.Final)
	}
	vote, err := accounting.RDP{}.Epsilon(j.Mechanism.Event(j.Mechanism.MinSurvivors()), s.Delta)
	if err != nil || vote.Epsilon > 2 || vote.Epsilon < 1.98 {
		t.Errorf("the vote alone spends ε = %v (%v), want just under 2", vote.Epsilon, err)
	}
	g, err := tu.Accountant(s).Epsilon(tu.Event(accounting.DPSGD(j.Final.NoiseMultiplier, 0.25, 8), s), s.Delta)
	if err != nil || g.Epsilon > 6 || g.Epsilon < 5.94 {
		t.Errorf("vote and training spend ε = %v (%v), want just under 6", g.Epsilon, err)
	}
	if _, err := tu.(Federated).Plan(context.Background(), s, 2, FederatedData{Dataset: "mnist", Arch: arch}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a total ε equal to the vote's: %v", err)
	}
}
