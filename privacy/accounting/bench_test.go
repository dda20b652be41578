package accounting

import (
	"context"
	"testing"
)

// ε of 10⁵ DP-SGD steps (q = 256/60000, σ = 1.1, δ = 1e-5).
func BenchmarkRDPEpsilon1e5Steps(b *testing.B) {
	for b.Loop() {
		if _, err := (RDP{}).Epsilon(DPSGD(1.1, 256.0/60000, 100000), 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPLDEpsilon1e5Steps(b *testing.B) {
	for b.Loop() {
		if _, err := (PLD{}).Epsilon(DPSGD(1.1, 256.0/60000, 100000), 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

// σ for ε = 3, δ = 1e-5, q = 256/60000, 2,350 steps (dptune's make run).
func BenchmarkCalibrateNoiseRDP(b *testing.B) {
	for b.Loop() {
		if _, err := CalibrateNoise(context.Background(), RDP{}, func(s float64) Event { return DPSGD(s, 256.0/60000, 2350) }, 3, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCalibrateNoisePLD(b *testing.B) {
	for b.Loop() {
		if _, err := CalibrateNoise(context.Background(), PLD{}, func(s float64) Event { return DPSGD(s, 256.0/60000, 2350) }, 3, 1e-5); err != nil {
			b.Fatal(err)
		}
	}
}
