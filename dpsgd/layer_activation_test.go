package dpsgd

import (
	"math"
	"testing"
)

// tanh32 is within 2·10⁻⁷ of math.Tanh everywhere (absolute; relative near
// 0), odd, and ±1 far out.
func TestTanh32(t *testing.T) {
	var worst float64
	for i := -200000; i <= 200000; i++ {
		x := float32(i) * 1e-4 // [−20, 20]
		got, want := float64(tanh32(x)), math.Tanh(float64(x))
		err := math.Abs(got - want)
		if math.Abs(want) < 1 {
			err = math.Min(err, err/math.Abs(want)) // relative where tanh is small
		}
		worst = math.Max(worst, err)
		if tanh32(-x) != -tanh32(x) {
			t.Fatalf("tanh32 not odd at %v", x)
		}
	}
	if worst > 2e-7 {
		t.Fatalf("largest error %.3g", worst)
	}
	if tanh32(1e-30) == 0 || tanh32(30) != 1 || tanh32(-30) != -1 {
		t.Fatalf("tanh32(1e-30) = %v, tanh32(±30) = %v, %v", tanh32(1e-30), tanh32(30), tanh32(-30))
	}
}
