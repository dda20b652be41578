package job

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// The vote tuner's Event, given the planned job's final training, is the
// ledger RunVote keeps when no client drops out at the fewest survivors the
// plan allows: the same ε, which for a private final training is the
// budget PlanVote calibrated to (just under Epsilon), in each mode.
func TestVoteTunerEventIsPlanVotesLedger(t *testing.T) {
	tu, err := tuning.Lookup(tuning.VoteName)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tu.(tuning.Federated); !ok {
		t.Fatalf("the %s tuner is not a tuning.Federated", tuning.VoteName)
	}
	for _, ti := range Tuners() {
		if ti.Federated != (ti.Name == tuning.VoteName) {
			t.Errorf("TunerInfo %s: Federated %v", ti.Name, ti.Federated)
		}
	}
	for _, mode := range []string{federated.FinalDPSGD, federated.FinalDPFedAvg, federated.FinalNonPrivate} {
		s := toyVote(t)
		s.Clients, s.Dropout, s.FinalTraining = 4, 0.25, mode
		j, err := PlanVote(context.Background(), s)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		fewest := j.Mechanism.MinSurvivors()
		out := federated.Outcome{Survivors: make([]int, fewest), RoundSurvivors: make([]int, j.Final.Rounds)}
		for r := range out.RoundSurvivors {
			out.RoundSurvivors[r] = fewest
		}
		ledger, err := voteLedger(j, out)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ledger.Spent(accounting.RDP{}, s.Delta)
		if err != nil {
			t.Fatal(err)
		}
		training, err := j.TrainingEvent()
		if err != nil {
			t.Fatal(err)
		}
		got, err := tu.Accountant(s.tuningSpec()).Epsilon(tu.Event(training, s.tuningSpec()), s.Delta)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		if got.Epsilon != want.Epsilon && !(math.IsInf(got.Epsilon, 1) && math.IsInf(want.Epsilon, 1)) {
			t.Errorf("%s: the tuner's event spends ε = %v, the ledger %v", mode, got.Epsilon, want.Epsilon)
		}
		if mode == federated.FinalNonPrivate {
			if !math.IsInf(got.Epsilon, 1) {
				t.Errorf("non-private final training: ε = %v, want +Inf", got.Epsilon)
			}
			continue
		}
		if got.Epsilon > s.Epsilon || got.Epsilon < 0.99*s.Epsilon {
			t.Errorf("%s: ε = %v, want calibrated just under %v", mode, got.Epsilon, s.Epsilon)
		}
	}
}

// A VoteSpec goes to Tune as the vote tuner's options and comes back the
// same vote.
func TestVoteSpecThroughTuneSpec(t *testing.T) {
	tu, _ := tuning.Lookup(tuning.VoteName)
	v := toyVote(t)
	v.Dropout, v.SplitAlpha, v.Colluding, v.TrainingTimeout, v.MessageTimeout = 0.1, 0.5, 1, time.Minute, time.Second
	back, err := v.TuneSpec().voteSpec(tu.(tuning.Federated))
	if err != nil {
		t.Fatal(err)
	}
	if back.Data.Name != v.Data.Name || back.Data.NominalN != v.Data.NominalN {
		t.Errorf("data %+v, want %+v", back.Data, v.Data)
	}
	back.Data, v.Data = Source{}, Source{}
	if !reflect.DeepEqual(back, v) {
		t.Errorf("through TuneSpec %+v, want %+v", back, v)
	}
}

// Tune runs the vote like any other tuner: a Go caller names it and sets
// its options, and the clients run in this process over loopback. The
// release's ledger is the vote at its survivors composed with the final
// DP-SGD, within the budget; a budget file is refused before any client
// starts.
func TestTuneRunsTheVote(t *testing.T) {
	v := toyVote(t)
	seed := v.Seed
	ts := TuneSpec{Data: v.Data, Tuner: tuning.VoteName, Space: tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{1e-3, 0.1}}}},
		Epsilon: 20, Delta: 1e-5, BatchSize: 32, Seed: &seed,
		Options: tuning.Values{"clients": 2, "votes-per-client": 1, "vote-epsilon": 5.0, "fedavg-rounds": 1}}
	bad := ts
	bad.Budget = "budget.json"
	if _, _, err := Tune(context.Background(), bad); !errors.Is(err, ErrInvalid) {
		t.Errorf("a budget file: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rel, diag, err := Tune(ctx, ts)
	if err != nil {
		t.Fatal(err)
	}
	rep, ok := rel.Report.(*VoteReport)
	if !ok || rep.Tuner != tuning.VoteName || rep.Survivors != 2 || rel.Model == nil || diag != nil {
		t.Fatalf("release %+v, report %+v, diagnostics %v", rel, rel.Report, diag)
	}
	j, err := PlanVote(ctx, v)
	if err != nil {
		t.Fatal(err)
	}
	training, err := j.TrainingEvent()
	if err != nil {
		t.Fatal(err)
	}
	want, err := accounting.RDP{}.Epsilon(accounting.Composed{Events: []accounting.Event{j.Mechanism.Event(2), training}}, v.Delta)
	if err != nil {
		t.Fatal(err)
	}
	if rel.Epsilon == nil || *rel.Epsilon != want.Epsilon || *rel.Epsilon > 20 || len(rel.Ledger.Entries) != 2 {
		t.Errorf("released ε %v, ledger %+v; want ε = %v ≤ 20 over two entries", rel.Epsilon, rel.Ledger.Entries, want.Epsilon)
	}
}

// The vote's final training clips with its clipping-norm option: a tuning
// asking for automatic clipping is refused before any client starts, not
// run with flat clipping.
func TestTuneRefusesTheVoteWithAutomaticClipping(t *testing.T) {
	s := toyVote(t).TuneSpec()
	s.Clipping, s.AutoClipGamma = dpsgd.AutomaticClipping, 0.01
	_, _, err := Tune(context.Background(), s)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "automatic clipping") {
		t.Fatalf("Tune(vote, automatic clipping) = %v, want a refusal wrapping ErrInvalid", err)
	}
}
