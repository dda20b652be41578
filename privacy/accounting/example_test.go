package accounting_test

import (
	"context"
	"fmt"

	"github.com/dptune/dptune/privacy/accounting"
)

// The noise multiplier σ for a target ε: DP-SGD on MNIST with expected
// batch 256 (q = 256/60000) for 10 epochs (2,350 steps), at ε = 3,
// δ = 1e-5 — `make run`'s setting. Calibration never overshoots the target;
// the tighter PLD accountant finds the same run cheaper.
func ExampleCalibrateNoise() {
	q, steps := 256.0/60000, 2350
	run := func(sigma float64) accounting.Event { return accounting.DPSGD(sigma, q, steps) }
	sigma, err := accounting.CalibrateNoise(context.Background(), accounting.RDP{}, run, 3, 1e-5)
	if err != nil {
		fmt.Println(err)
		return
	}
	rdp, _ := accounting.RDP{}.Epsilon(run(sigma), 1e-5)
	pld, _ := accounting.PLD{}.Epsilon(run(sigma), 1e-5)
	fmt.Printf("σ = %.4f: ε = %.3f by rdp, %.2f by pld\n", sigma, rdp.Epsilon, pld.Epsilon)
	// Output:
	// σ = 0.7422: ε = 3.000 by rdp, 2.40 by pld
}
