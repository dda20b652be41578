package federated

import (
	"fmt"
	"math"
)

// SumBound is the largest |coordinate| of an honest secure sum of the vote:
// S·n (every client votes for the candidate) plus k·s·√n, k =
// √(2 ln(2d/MaxWrapProbability)), s = LocalStddev (each discrete Gaussian
// share is s²-sub-Gaussian, Canonne, Kamath & Steinke 2020; a union bound
// over the d candidates): an honest sum exceeds it with probability at
// most MaxWrapProbability.
func (m Mechanism) SumBound() float64 {
	k := math.Sqrt(2 * math.Log(2*float64(m.Candidates)/MaxWrapProbability))
	return float64(m.Scale)*float64(m.Clients) + k*m.LocalStddev()*math.Sqrt(float64(m.Clients))
}

// CheckSum returns an error if a coordinate of the vote's sum, read as a
// signed integer, lies outside ±SumBound: a client sent a vote vector no
// honest client sends (or the sum wrapped), and the round must abort
// rather than release its argmax. An honest sum is refused with
// probability at most MaxWrapProbability.
func (m Mechanism) CheckSum(sum []uint64) error {
	if len(sum) != m.Candidates {
		return fmt.Errorf("vote: a sum of %d coordinates for %d candidates", len(sum), m.Candidates)
	}
	b := m.SumBound()
	for i, w := range sum {
		if math.Abs(float64(int64(w))) > b {
			return fmt.Errorf("vote: candidate %d's noisy count %d is outside the bound ±%.0f of honest votes", i, int64(w), b)
		}
	}
	return nil
}
