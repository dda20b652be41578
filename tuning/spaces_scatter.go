package tuning

// The ScatterNet search spaces, "scatter-mnist" and "scatter-cifar10": the
// default spaces of a tuning whose network reads ScatterNet features
// (Tramèr & Boneh 2021, "Differentially Private Learning Needs Better
// Features (or Much More Data)"), around the settings their paper and our
// validation sweeps found (job.NetworkDefaults): learning rate 1, 2, 4, 8
// (log) × batch size × epochs × schedule (constant, cosine) × the network
// (the linear model or the CNN on the same features), clipping norm 0.1 and
// momentum 0.9 fixed (the networks' own): 64 candidates each.
//
//   - scatter-mnist: batch 2048 or 4096, 20 or 40 epochs,
//     scatter-linear-mnist or scatter-cnn-mnist.
//   - scatter-cifar10: batch 4096 or 8192, 30 or 60 epochs,
//     scatter-linear-cifar10 or scatter-cnn-cifar10.
//
// Candidates differ in batch size, epochs and network, so every run is
// counted as the costliest of the eight combinations (Hyper.Event).
func init() {
	scatter := func(name string, batches, epochs []float64, networks ...string) func() Space {
		return func() Space {
			return Space{Name: name, Dims: []Dim{
				{Name: LearningRate, Values: []float64{1, 2, 4, 8}, Log: true},
				{Name: BatchSize, Values: batches, Log: true},
				{Name: Epochs, Values: epochs},
				Categorical(LRSchedule, "constant", "cosine"),
				Categorical(Network, networks...),
			}}
		}
	}
	RegisterSpace("scatter-mnist", scatter("scatter-mnist", []float64{2048, 4096}, []float64{20, 40}, "scatter-linear-mnist", "scatter-cnn-mnist"))
	RegisterSpace("scatter-cifar10", scatter("scatter-cifar10", []float64{4096, 8192}, []float64{30, 60}, "scatter-linear-cifar10", "scatter-cnn-cifar10"))
}
