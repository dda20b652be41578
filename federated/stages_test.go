package federated

import (
	"strings"
	"testing"

	"github.com/dptune/dptune/model"
)

// A job whose clients would train a network with a privacy-spending layer
// (dpsgd.Stages) by DP-SGD is refused: each client would estimate the
// layer on its own data, which the final training's event does not count.
func TestCheckRefusesSpendingLayerUnderDPSGD(t *testing.T) {
	j := toyJob(t, 4, 0)
	if err := j.Check(); err != nil {
		t.Fatalf("the toy job: %v", err)
	}
	arch, err := model.NewArch(model.Spec{Name: "toy-dn", Layers: []model.LayerSpec{model.DataNorm(8, 0, 0), model.Flatten(), model.Linear(2)}}, 1, 4, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	j.Arch = arch
	if err := j.Check(); err == nil || !strings.Contains(err.Error(), "datanorm") {
		t.Fatalf("DP-SGD final training of a datanorm network: %v", err)
	}
	j.Final = Final{Mode: FinalNonPrivate, Rounds: 2, StepsPerRound: 5, SamplingRate: 0.1}
	if err := j.Check(); err != nil {
		t.Fatalf("non-private final training of a datanorm network: %v", err)
	}
}
