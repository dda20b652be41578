package federated

import (
	"context"
	"math"
	"testing"

	"github.com/dptune/dptune/privacy/accounting"
)

// With c colluding clients the server knows c of the survivors' noise
// shares, so the shares the others add must carry the whole variance: at
// the fewest survivors, (⌈(1−f)n⌉ − c)·LocalStddev² ≥ (S·σ)², and the vote's
// ε computed from those honest shares alone (an independent
// DistributedDiscreteGaussian, not Mechanism.Event) meets the target. With
// c = 0 nothing changes.
func TestColludersSharesAreNotCountedAsNoise(t *testing.T) {
	const eps, delta = 1.0, 1e-5
	base := Mechanism{Clients: 10, Candidates: 24, VotesPerClient: 3, Scale: DefaultScale, Dropout: 0.2}
	var sigma0 float64
	for _, c := range []int{0, 1, 3} {
		m := base
		m.Colluding = c
		m, err := Calibrate(context.Background(), m, eps, delta)
		if err != nil {
			t.Fatalf("c = %d: %v", c, err)
		}
		honest := m.MinSurvivors() - c
		if v, want := float64(honest)*m.LocalStddev()*m.LocalStddev(), math.Pow(float64(m.Scale)*m.NoiseStddev, 2); v < want*(1-1e-12) {
			t.Errorf("c = %d: the %d honest shares have variance %v, below (Sσ)² = %v", c, honest, v, want)
		}
		l, s := float64(m.VotesPerClient), float64(m.Scale)
		ddg := accounting.DistributedDiscreteGaussian{LocalStddev: m.LocalStddev(), Summands: honest, Dimension: m.Candidates,
			L2Sensitivity: s * math.Sqrt(2*l), L1Sensitivity: 2 * l * s, Adjacency: "replace-one-client"}
		g, err := accounting.RDP{}.Epsilon(ddg, delta)
		if err != nil {
			t.Fatal(err)
		}
		if g.Epsilon > eps*(1+1e-9) {
			t.Errorf("c = %d: against the server and its colluders ε = %v, above the target %v", c, g.Epsilon, eps)
		}
		if c == 0 {
			sigma0 = m.LocalStddev()
			if ev := m.Event(m.MinSurvivors()); ev.Summands != m.MinSurvivors() {
				t.Errorf("c = 0: the event counts %d summands, want every survivor (%d)", ev.Summands, m.MinSurvivors())
			}
		} else if m.LocalStddev() <= sigma0 {
			t.Errorf("c = %d: share σ = %v, not above the c = 0 share %v", c, m.LocalStddev(), sigma0)
		}
	}
	u := UpdateSum{Clients: 10, Dimension: 100, ClipNorm: 1, NoiseMultiplier: 1, Scale: DefaultUpdateScale(100, 1), Dropout: 0.2}
	u0 := u.LocalStddev()
	u.Colluding = 3
	if got, want := u.LocalStddev(), u0*math.Sqrt(8.0/5.0); math.Abs(got-want) > 1e-9*want {
		t.Errorf("DP-FedAvg share with 3 colluders of 10 at f = 0.2: σ = %v, want %v = σ₀·√(8/5)", got, want)
	}
	if ev := u.Event(8); ev.Summands != 5 {
		t.Errorf("DP-FedAvg event of 8 survivors with 3 colluders counts %d summands, want 5", ev.Summands)
	}
}
