package job

import (
	"context"
	"math"
	"testing"

	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// The vote tuner's Event, given the planned job's final training, is the
// ledger RunVote keeps when no client drops out at the fewest survivors the
// plan allows: the same ε, which for a private final training is the
// budget PlanVote calibrated to (just under Epsilon), in each mode.
func TestVoteTunerEventIsPlanVotesLedger(t *testing.T) {
	tu, err := tuning.Lookup(Vote)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tu.(tuning.Federated); !ok {
		t.Fatalf("the %s tuner is not a tuning.Federated", Vote)
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
