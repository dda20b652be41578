package job_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// tinyMNIST is a Source of n synthetic 28×28 images whose label shows in
// the image, with nominal size n; its test set is a further 50 images.
func tinyMNIST(n int) job.Source {
	make := func(n int, rng *rand.Rand) *data.Dataset {
		d := &data.Dataset{Name: "tiny", N: n, C: 1, H: 28, W: 28, Classes: 10, X: make([]float32, n*784), Y: make([]uint8, n)}
		for i := range d.Y {
			d.Y[i] = uint8(rng.IntN(10))
			for k := 0; k < 784; k++ {
				d.X[i*784+k] = float32(rng.NormFloat64() * 0.3)
				if k%10 == int(d.Y[i]) {
					d.X[i*784+k]++
				}
			}
		}
		return d
	}
	return job.Source{Name: "tiny", Arch: model.MNIST, NominalN: n, Load: func() (*data.Dataset, *data.Dataset, error) {
		rng := rand.New(rand.NewPCG(1, 2))
		return make(n, rng), make(50, rng), nil
	}}
}

// Private training to a target ε: the noise multiplier is calibrated so that
// the whole run is (2, 1e-5)-DP by the RDP accountant.
func ExampleTrain() {
	seed := uint64(1)
	rel, _, err := job.Train(context.Background(), job.TrainSpec{
		Data: tinyMNIST(256), Epsilon: 2, Delta: 1e-5, ClipNorm: 1,
		BatchSize: 64, Epochs: 2, LearningRate: 0.5, Seed: &seed,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	rep := rel.Report.(*job.TrainReport)
	fmt.Printf("ε = %.2f at δ = %g (%s)\n", *rel.Epsilon, rel.Delta, rel.Accountant)
	fmt.Printf("σ = %.3f, q = %g, %d steps\n", rep.NoiseMultiplier, rep.SamplingRate, rep.Steps)
	fmt.Println("ledger:", rel.Ledger.Entries[0].Label)
	fmt.Println("model released:", rel.Model != nil)
	// Output:
	// ε = 2.00 at δ = 1e-05 (rdp)
	// σ = 2.052, q = 0.25, 8 steps
	// ledger: dpsgd training
	// model released: true
}

// Random-stop tuning under a total budget: K ~ Poisson(2) DP-SGD runs on
// candidates drawn uniformly, scores on a private validation split released
// as noisy counts, the best run released — its ε covers all of it.
func ExampleTune_randomStop() {
	seed := uint64(3)
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: tuning.LearningRate, Values: []float64{0.1, 0.5}}}}
	rel, _, err := job.Tune(context.Background(), job.TuneSpec{
		Data: tinyMNIST(600), Tuner: "randomstop", Space: space, Epsilon: 8, Delta: 1e-5,
		Epochs: 1, BatchSize: 50, Repetitions: accounting.PoissonRepetitions(2),
		Validation: "private", ValSize: 100, ScoreNoise: 5, Seed: &seed,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("ε = %.2f at δ = %g (%s)\n", *rel.Epsilon, rel.Delta, rel.Accountant)
	fmt.Println("ledger:", rel.Ledger.Entries[0].Label)
	fmt.Println("model released:", rel.Model != nil, "— its score is a noisy count over 100:", *rel.Score*100 == float64(int64(*rel.Score*100)))
	// Output:
	// ε = 8.00 at δ = 1e-05 (rdp)
	// ledger: random-stop tuning, Poisson(μ = 2) runs, best released
	// model released: true — its score is a noisy count over 100: true
}

// The ε of a DP-SGD run (σ = 1.1, q = 256/60000, 60 epochs: TF Privacy's
// MNIST tutorial setting) by the RDP accountant and by the tighter PLD accountant.
func ExampleAccount() {
	for _, acc := range []string{"rdp", "pld"} {
		res, err := job.Account(context.Background(), job.AccountSpec{Solve: "epsilon", Accountant: acc,
			NoiseMultiplier: 1.1, SamplingRate: 256.0 / 60000, Steps: 14063, Delta: 1e-5})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s: ε = %.2f\n", res.Accountant, *res.Epsilon)
	}
	// Output:
	// rdp: ε = 2.60
	// pld: ε = 2.38
}
