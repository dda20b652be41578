package noise_test

import (
	"fmt"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/privacy/noise"
)

// ExampleNoisyCount releases a count of correct predictions with discrete
// Gaussian noise of σ = 20 counts. The release is an integer, so dividing it
// by the number of examples afterwards leaks nothing through low-order bits.
func ExampleNoisyCount() {
	rng := randsrc.Seeded(1, "example")
	const correct, examples = 4321, 5000
	released, err := noise.NoisyCount(correct, 20, rng)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("released count %d, accuracy %.4f\n", released, float64(released)/examples)
	// Output: released count 4318, accuracy 0.8636
}
