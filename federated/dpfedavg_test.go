package federated

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// TestRoundedUpdateBound: whatever the update and the rounding's coins, the
// rounded vector stays within B = S·C + √d, the bound the sensitivity is
// computed from — including updates on the clipping sphere whose scaled
// coordinates all sit just below an integer's half, the worst case for
// rounding up.
func TestRoundedUpdateBound(t *testing.T) {
	u := UpdateSum{Clients: 4, Dimension: 50, ClipNorm: 0.5, NoiseMultiplier: 1, Scale: 4}
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		v := make([]float32, u.Dimension)
		for i := range v {
			switch trial % 3 {
			case 0:
				v[i] = float32(rng.NormFloat64())
			case 1: // every coordinate equal: after clipping, S·C/√d = 0.28 each
				v[i] = 1
			default:
				v[i] = float32(rng.NormFloat64() * 1e-3)
			}
		}
		x, err := u.rounded(v, rng)
		if err != nil {
			t.Fatal(err)
		}
		n := 0.0
		for _, w := range x {
			n += float64(w) * float64(w)
		}
		if math.Sqrt(n) >= u.Bound() {
			t.Fatalf("trial %d: ‖x‖ = %v ≥ B = %v", trial, math.Sqrt(n), u.Bound())
		}
	}
}

// TestUpdateSumMeanAndClip: the decoded sum of n encodings is the mean of
// the clipped updates, within six standard deviations of the noise on the
// mean (z·2B/(S·n)) plus the rounding (below 1/S per client); an update of
// norm 10·C arrives as one of norm C.
func TestUpdateSumMeanAndClip(t *testing.T) {
	const n, d = 5, 200
	u := UpdateSum{Clients: n, Dimension: d, ClipNorm: 1, NoiseMultiplier: 0.01, Scale: DefaultUpdateScale(d, 1)}
	if err := u.Check(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	want := make([]float64, d)
	sum := make([]uint64, d)
	for c := range n {
		v := make([]float32, d)
		norm := 0.0
		for i := range v {
			v[i] = float32(rng.NormFloat64())
			norm += float64(v[i]) * float64(v[i])
		}
		scale := 1.0
		if c == 0 { // norm ≈ 10·√d ≫ C: clipped
			for i := range v {
				v[i] *= 10
			}
			norm *= 100
		}
		norm = math.Sqrt(norm)
		if norm > u.ClipNorm {
			scale = u.ClipNorm / norm
		}
		for i := range v {
			want[i] += float64(v[i]) * scale / n
		}
		x, err := u.Encode(v, rng)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range x {
			sum[i] += w
		}
	}
	tol := 6*u.NoiseMultiplier*2*u.Bound()/(u.Scale*n) + 1/u.Scale
	for i, got := range u.Decode(sum, n) {
		if math.Abs(got-want[i]) > tol {
			t.Fatalf("coordinate %d: mean %v, want %v ± %v", i, got, want[i], tol)
		}
	}
}

// TestUpdateSumEventIsGaussian: with every client in the sum and shares of
// σ in the thousands (τ = 0), a round is the Gaussian mechanism of noise
// multiplier z: RDP α/(2z²) (Mironov 2017, Proposition 7).
func TestUpdateSumEventIsGaussian(t *testing.T) {
	u := UpdateSum{Clients: 10, Dimension: 26010, ClipNorm: 0.5, NoiseMultiplier: 1.3, Dropout: 0.2}
	u.Scale = DefaultUpdateScale(u.Dimension, u.ClipNorm)
	if err := u.Check(); err != nil {
		t.Fatal(err)
	}
	for _, alpha := range []float64{1.5, 4, 32} {
		got, err := accounting.DistributedDiscreteGaussianRDP(u.Event(8), alpha)
		if err != nil {
			t.Fatal(err)
		}
		if want := alpha / (2 * u.NoiseMultiplier * u.NoiseMultiplier); math.Abs(got-want) > 1e-12*want {
			t.Errorf("α = %v: RDP %v, want %v", alpha, got, want)
		}
	}
	// With more survivors than ⌈(1−f)n⌉ there is more noise, never less.
	lo, _ := accounting.DistributedDiscreteGaussianRDP(u.Event(10), 4)
	hi, _ := accounting.DistributedDiscreteGaussianRDP(u.Event(8), 4)
	if !(lo < hi) {
		t.Errorf("10 survivors: RDP %v, 8 survivors: %v", lo, hi)
	}
}

// TestCalibrateUpdates: the calibrated z meets the budget with the vote
// composed in, and 1% less noise would not.
func TestCalibrateUpdates(t *testing.T) {
	u := UpdateSum{Clients: 10, Dimension: 1000, ClipNorm: 1}
	u.Scale = DefaultUpdateScale(u.Dimension, u.ClipNorm)
	vote := Mechanism{Clients: 10, Candidates: 24, VotesPerClient: 3, NoiseStddev: 5, Scale: DefaultScale}
	before := vote.Event(10)
	const rounds, eps, delta = 5, 4.0, 1e-5
	z, err := CalibrateUpdates(context.Background(), u, before, rounds, eps, delta)
	if err != nil {
		t.Fatal(err)
	}
	spent := func(z float64) float64 {
		c := u
		c.NoiseMultiplier = z
		e, err := accounting.RDP{}.Epsilon(accounting.Composed{Events: []accounting.Event{before,
			accounting.SelfComposed{Event: c.Event(10), Count: rounds}}}, delta)
		if err != nil {
			t.Fatal(err)
		}
		return e.Epsilon
	}
	if e := spent(z); e > eps {
		t.Errorf("z = %v spends ε = %v > %v", z, e, eps)
	}
	if e := spent(0.99 * z); e <= eps {
		t.Errorf("0.99·z = %v spends only ε = %v ≤ %v: not the least z", 0.99*z, e, eps)
	}
}

func TestUpdateSumCheck(t *testing.T) {
	good := UpdateSum{Clients: 4, Dimension: 34, ClipNorm: 1, NoiseMultiplier: 1, Scale: 1024}
	if err := good.Check(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []func(*UpdateSum){
		func(u *UpdateSum) { u.Clients = 1 },
		func(u *UpdateSum) { u.Dimension = 0 },
		func(u *UpdateSum) { u.ClipNorm = math.NaN() },
		func(u *UpdateSum) { u.NoiseMultiplier = 0 },
		func(u *UpdateSum) { u.NoiseMultiplier = 1e-9 }, // share below ½
		func(u *UpdateSum) { u.Scale = 1000 },           // not a power of two
		func(u *UpdateSum) { u.Dropout = 0.8 },          // fewer than two survivors of four
		func(u *UpdateSum) { u.NoiseMultiplier = 1e6 },  // share above the sampler's range
	} {
		u := good
		bad(&u)
		if err := u.Check(); err == nil {
			t.Errorf("%+v: no error", u)
		}
	}
	if _, err := good.Encode(make([]float32, 33), rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("an update of the wrong length was encoded")
	}
	nan := make([]float32, 34)
	nan[3] = float32(math.NaN())
	if _, err := good.Encode(nan, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("a NaN update was encoded")
	}
}

// TestDPFedAvgOverGRPC: the final training through the secure sum gives
// exactly the model Job.FedAvg computes in one process with the same
// seeds, and the server learns each round's survivors for the ledger.
func TestDPFedAvgOverGRPC(t *testing.T) {
	job := toyJob(t, 4, 0)
	job.Final.Mode, job.Final.ClipNorm, job.Final.NoiseMultiplier = FinalDPFedAvg, 0.5, 0.05
	job.Final.Scale = DefaultUpdateScale(34, job.Final.ClipNorm)
	out, err, _ := session(t, job, -1, true)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.RoundSurvivors, []int{4, 4}) {
		t.Errorf("survivors per round %v, want [4 4]", out.RoundSurvivors)
	}
	shares, err := job.Shares(toyData(job.NominalN))
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(100)
	net, err := job.FedAvg(context.Background(), shares, out.Winner, &seed)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Params, net.Params) {
		t.Errorf("over gRPC %v\nin process %v", out.Params[:4], net.Params[:4])
	}
	init, err := model.New(job.Arch, randsrc.New(&job.InitSeed, "init"))
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(init.Params, out.Params) {
		t.Error("the rounds left the initial model unchanged")
	}
}
