package federated

import (
	"math"
	"math/rand/v2"
	"testing"
)

// An honest sum (every client's noisy share of a vote) passes CheckSum; one
// in which a client added 2·SumBound to a candidate, or a negative count
// beyond the bound, is refused, so its argmax is never released.
func TestCheckSumBounds(t *testing.T) {
	m := Mechanism{Clients: 5, Candidates: 4, VotesPerClient: 2, NoiseStddev: 1, Scale: DefaultScale}
	if err := m.Check(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sum := make([]uint64, m.Candidates)
	for c := range m.Clients {
		share, err := m.NoisyShare(TopVotes([]float64{1, 2, float64(c), 0}, m.VotesPerClient), rng)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range share {
			sum[i] += w
		}
	}
	if err := m.CheckSum(sum); err != nil {
		t.Errorf("honest sum %v: %v", sum, err)
	}
	b := int64(math.Ceil(m.SumBound()))
	for _, off := range []int64{2 * b, -2 * b} {
		bad := append([]uint64(nil), sum...)
		bad[3] += uint64(off)
		if err := m.CheckSum(bad); err == nil {
			t.Errorf("a sum moved by %d on candidate 3 was accepted", off)
		}
	}
}
