package dpsgd

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/gemm"
	"github.com/dptune/dptune/model"
)

// paramsDigest is the SHA-256 of the parameters as little-endian float32.
func paramsDigest(p []float32) string {
	b := make([]byte, 4*len(p))
	for i, v := range p {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

// opacus-mnist trains bit for bit as it did before networks became specs:
// the digests are those of the hand-wired conv, conv, linear, linear engine
// (commit 9c0a690) after 8 seeded DP-SGD steps and 8 non-private ones, with
// 2 workers, on the AVX2/FMA kernel (others round differently: the engine
// matches the reference to 1e-5 there, TestEngineMatchesReference).
func TestOpacusMNISTBitForBit(t *testing.T) {
	if gemm.Kernel() != "avx2-fma" {
		t.Skipf("kernel %s: the digests are the AVX2/FMA kernel's", gemm.Kernel())
	}
	const n = 2000
	net, x, y := randomData(t, model.MNIST, n, 7)
	train := &data.Dataset{Name: "golden", X: x, Y: y, N: n, C: 1, H: 28, W: 28, Classes: 10}
	seed := uint64(11)
	engine, err := newEngineWorkers(net, 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: 64.0 / n, Steps: 8, LearningRate: 0.5, Seed: &seed, Noise: NoiseFast}
	if _, err := Train(context.Background(), net, train, cfg, engine, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := paramsDigest(net.Params), "48d4433cb5773434a35c1534e2c2eefacc4ed7f2c4a9bc4579a92b8d4345c0f0"; got != want {
		t.Errorf("DP-SGD: parameters %s, want %s", got, want)
	}
	cfg = Config{NonPrivate: true, SamplingRate: 64.0 / n, Steps: 8, LearningRate: 0.1, Seed: &seed}
	if _, err := Train(context.Background(), net, train, cfg, engine, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := paramsDigest(net.Params), "6be661667ac26ea09b6f63bc9c54d0aae618fdeebee882b639a172d25ac409aa"; got != want {
		t.Errorf("non-private: parameters %s, want %s", got, want)
	}
}
