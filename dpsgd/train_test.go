package dpsgd

import (
	"context"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
)

// fakeEngine adds add(idx) to every coordinate of the sum and records batch sizes.
type fakeEngine struct {
	add     func(idx []int) float32
	batches []int
}

func (f *fakeEngine) ClippedSum(_ []float32, _ []uint8, idx []int, _ Clip, sum []float32) (float64, error) {
	v := f.add(idx)
	for k := range sum {
		sum[k] += v
	}
	f.batches = append(f.batches, len(idx))
	return 0, nil
}

func smallSet(t testing.TB, n int) (*model.Net, *data.Dataset) {
	net, x, y := randomData(t, model.MNIST, n, 5)
	return net, &data.Dataset{Name: "small", X: x, Y: y, N: n, C: 1, H: 28, W: 28, Classes: 10}
}

func seed(s uint64) *uint64 { return &s }

// With a zero gradient sum, one step moves every parameter by
// −η·N(0, σ²C²)/(qN): the noise's standard deviation is ησC/(qN), in every
// noise mode, with qN the nominal expected batch size when one is given.
func TestNoiseScale(t *testing.T) {
	for _, c := range []struct {
		name       string
		mode       NoiseMode
		seed       *uint64
		expected   float64 // ExpectedBatchSize; 0: q·N = 10
		wantSecure bool
	}{
		{"seeded auto is fast", NoiseAuto, seed(1), 0, false},
		{"seeded secure", NoiseSecure, seed(1), 0, true},
		{"unseeded auto is secure", NoiseAuto, nil, 0, true},
		{"nominal batch", NoiseFast, seed(2), 25, false},
	} {
		net, train := smallSet(t, 100)
		before := append([]float32(nil), net.Params...)
		cfg := Config{NoiseMultiplier: 2, ClipNorm: 0.5, SamplingRate: 0.1, Steps: 1, LearningRate: 0.3, Seed: c.seed,
			Noise: c.mode, ExpectedBatchSize: c.expected}
		res, err := Train(context.Background(), net, train, cfg, &fakeEngine{add: func([]int) float32 { return 0 }}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.SecureNoise != c.wantSecure {
			t.Errorf("%s: secure noise %v", c.name, res.SecureNoise)
		}
		var s, s2 float64
		for k := range before {
			d := float64(net.Params[k] - before[k])
			s += d
			s2 += d * d
		}
		n := float64(len(before))
		qn := 10.0
		if c.expected > 0 {
			qn = c.expected
		}
		want := 0.3 * 2 * 0.5 / qn
		if sd := math.Sqrt(s2/n - (s/n)*(s/n)); math.Abs(sd-want) > 0.03*want {
			t.Fatalf("%s: update sd %v, want ησC/(qN) = %v", c.name, sd, want)
		}
		if mean := s / n; math.Abs(mean) > 4*want/math.Sqrt(n) {
			t.Fatalf("%s: update mean %v, want 0", c.name, mean)
		}
	}
}

// Two steps of momentum SGD move every parameter by η₀g₁ + η₁(μg₁ + g₂),
// with η₁ = η under the constant schedule and η/2 under the cosine one
// (step 1 of 2).
func TestUpdateRule(t *testing.T) {
	for _, schedule := range []Schedule{ConstantLR, CosineLR} {
		net, train := smallSet(t, 200)
		before := append([]float32(nil), net.Params...)
		fe := &fakeEngine{add: func(idx []int) float32 { return float32(len(idx)) }}
		const q, lr, mu = 0.05, 0.5, 0.9
		cfg := Config{SamplingRate: q, Steps: 2, LearningRate: lr, Momentum: mu, Schedule: schedule, NonPrivate: true, Seed: seed(2)}
		res, err := Train(context.Background(), net, train, cfg, fe, nil)
		if err != nil {
			t.Fatal(err)
		}
		if fe.batches[0] == fe.batches[1] && fe.batches[0] == 10 {
			t.Log("both batches happened to have the expected size")
		}
		lr1 := lr
		if schedule == CosineLR {
			lr1 = lr / 2
		}
		g1, g2 := float64(fe.batches[0])/(q*200), float64(fe.batches[1])/(q*200)
		v2 := mu*g1 + g2
		want := lr*g1 + lr1*v2
		for k := range before {
			if d := float64(before[k] - net.Params[k]); math.Abs(d-want) > 1e-5*(1+want) {
				t.Fatalf("%v: param %d moved by %v, want %v (batches %v)", schedule, k, d, want, fe.batches)
			}
		}
		if _, ok := res.Event.(accounting.NonPrivate); !ok {
			t.Fatalf("non-private run reported %#v", res.Event)
		}
		if res.MeanBatchSize != float64(fe.batches[0]+fe.batches[1])/2 {
			t.Fatalf("mean batch %v, batches %v", res.MeanBatchSize, fe.batches)
		}
	}
}

func TestSeedReproducibility(t *testing.T) {
	run := func(s uint64) []float32 {
		net, train := smallSet(t, 120)
		cfg := Config{NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: 0.1, Steps: 4, LearningRate: 0.5, Seed: seed(s)}
		if _, err := Train(context.Background(), net, train, cfg, nil, nil); err != nil {
			t.Fatal(err)
		}
		return net.Params
	}
	a, b, c := run(7), run(7), run(8)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different parameters")
	}
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds, same parameters")
	}
}

// An interrupted run returns the event of the steps it completed.
func TestInterruptAccountsCompletedSteps(t *testing.T) {
	net, train := smallSet(t, 100)
	ctx, cancel := context.WithCancel(context.Background())
	cfg := Config{NoiseMultiplier: 1.3, ClipNorm: 1, SamplingRate: 0.1, Steps: 10, LearningRate: 0.1, Seed: seed(3)}
	res, err := Train(ctx, net, train, cfg, &fakeEngine{add: func([]int) float32 { return 0 }}, func(p Progress) {
		if p.Step == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || res.Steps != 3 {
		t.Fatalf("steps %d, err %v", res.Steps, err)
	}
	if !reflect.DeepEqual(res.Event, accounting.DPSGD(1.3, 0.1, 3)) {
		t.Fatalf("event %#v", res.Event)
	}
}

func TestDivergenceIsAnError(t *testing.T) {
	net, train := smallSet(t, 50)
	cfg := Config{SamplingRate: 0.5, Steps: 5, LearningRate: 1, NonPrivate: true}
	res, err := Train(context.Background(), net, train, cfg, &fakeEngine{add: func([]int) float32 { return float32(math.Inf(1)) }}, nil)
	if err == nil || res.Steps != 1 {
		t.Fatalf("steps %d, err %v", res.Steps, err)
	}
}

func TestConfigValidate(t *testing.T) {
	ok := Config{NoiseMultiplier: 1, ClipNorm: 1, SamplingRate: 0.01, Steps: 1, LearningRate: 0.1}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Config){
		func(c *Config) { c.SamplingRate = 0 }, func(c *Config) { c.SamplingRate = 1.5 },
		func(c *Config) { c.Steps = -1 }, func(c *Config) { c.LearningRate = 0 },
		func(c *Config) { c.Momentum = 1 }, func(c *Config) { c.NoiseMultiplier = 0 },
		func(c *Config) { c.ClipNorm = -1 }, func(c *Config) { c.NonPrivate = true },
		func(c *Config) { c.NoiseMultiplier = math.NaN() },
	}
	for i, f := range bad {
		c := ok
		f(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("case %d: %+v accepted", i, c)
		}
	}
	if got, err := StepsForEpochs(10, 256.0/60000), CheckEpochs(10, 256.0/60000); got != 2350 || err != nil {
		t.Errorf("10 epochs at q = 256/60000: %d steps (%v), want 10·⌈234.375⌉ = 2350", got, err)
	}
	if got, err := StepsForEpochs(3, 0.01), CheckEpochs(3, 0.01); got != 300 || err != nil {
		t.Errorf("3 epochs at q = 0.01: %d steps (%v), want 300", got, err)
	}
	// Inputs that overflowed int or gave negative steps before the cap.
	for _, c := range []struct {
		epochs int
		q      float64
	}{{4611686018427387904, 256.0 / 60000}, {100000000000, 1e-9}, {1, 1e-9 / 2}, {0, 0.5}, {1, 0}, {1, 1.5}} {
		if err := CheckEpochs(c.epochs, c.q); err == nil {
			t.Errorf("%d epochs at q = %v accepted", c.epochs, c.q)
		}
	}
}

// The cosine schedule against its closed form η(1 + cos(πt/T))/2: η at the
// first step, η/2 half way, η(1 + cos(π·3/4))/2 three quarters in, and
// decreasing; the constant one is η throughout; names round-trip.
func TestSchedule(t *testing.T) {
	const lr, T = 0.8, 400
	for _, c := range []struct {
		t    int
		want float64
	}{{0, lr}, {T / 2, lr / 2}, {3 * T / 4, lr * (1 - math.Sqrt2/2) / 2}, {T, 0}} {
		if got := CosineLR.Rate(lr, c.t, T); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("cosine rate at step %d of %d: %v, want %v", c.t, T, got, c.want)
		}
	}
	for s := 1; s < T; s++ {
		if CosineLR.Rate(lr, s, T) >= CosineLR.Rate(lr, s-1, T) {
			t.Fatalf("cosine rate does not decrease at step %d", s)
		}
		if ConstantLR.Rate(lr, s, T) != lr {
			t.Fatalf("constant rate changes at step %d", s)
		}
	}
	for _, s := range []Schedule{ConstantLR, CosineLR} {
		if got, err := ParseSchedule(s.String()); got != s || err != nil {
			t.Errorf("ParseSchedule(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseSchedule("step"); err == nil {
		t.Error("ParseSchedule accepted an unknown name")
	}
	if err := (Config{SamplingRate: 0.1, LearningRate: 1, Schedule: CosineLR + 1}).Validate(); err == nil {
		t.Error("Validate accepted an unknown schedule")
	}
}

// With EMADecay, the parameters Train leaves are the moving average of the
// iterates with d_t = min(d, (1 + t)/(10 + t)), computed here in float64
// from the iterates plain SGD takes on the same batches.
func TestEMA(t *testing.T) {
	const q, lr, decay, steps = 0.05, 0.5, 0.2, 4
	net, train := smallSet(t, 200)
	before := append([]float32(nil), net.Params...)
	fe := &fakeEngine{add: func(idx []int) float32 { return float32(len(idx)) }}
	cfg := Config{SamplingRate: q, Steps: steps, LearningRate: lr, NonPrivate: true, Seed: seed(3), EMADecay: decay}
	if _, err := Train(context.Background(), net, train, cfg, fe, nil); err != nil {
		t.Fatal(err)
	}
	for k := range before {
		theta := float64(before[k])
		avg := theta
		for s, b := range fe.batches {
			theta -= lr * float64(b) / (q * 200)
			d := math.Min(decay, float64(1+s)/float64(10+s))
			avg = d*avg + (1-d)*theta
		}
		if got := float64(net.Params[k]); math.Abs(got-avg) > 1e-5*(1+math.Abs(avg)) {
			t.Fatalf("param %d: %v, want the average %v (last iterate %v)", k, got, avg, theta)
		}
	}
	if err := (Config{SamplingRate: 0.1, LearningRate: 1, EMADecay: 1}).Validate(); err == nil {
		t.Error("Validate accepted EMA decay 1")
	}
}
