package model

import (
	"fmt"
	"math/rand/v2"
)

// RandomArch returns a random valid network on a random small input (1–3
// channels, 5–12 pixels a side, 2–5 classes): every layer type of Spec at
// random depths, kernel sizes, strides, paddings, pools, activations and
// group norms, for tests that check the gorgonia graph and dpsgd's engine
// on shapes nobody wrote by hand. It draws from rng only, so a seed
// reproduces it.
func RandomArch(rng *rand.Rand) Arch {
	for {
		c, h, w, classes := 1+rng.IntN(3), 5+rng.IntN(8), 5+rng.IntN(8), 2+rng.IntN(4)
		if a, err := NewArch(randomSpec(rng, c, classes), c, h, w, classes); err == nil {
			return a
		}
	}
}

func randomSpec(rng *rand.Rand, c, classes int) Spec {
	var ls []LayerSpec
	act := func() {
		switch rng.IntN(3) {
		case 0:
			ls = append(ls, ReLU())
		case 1:
			ls = append(ls, Tanh())
		}
	}
	// A group norm gets groups of at least 4 channels: with fewer values
	// per group the normalisation is ill-conditioned (two values normalise
	// to ±1 whatever they are), and float32 rounding alone moves its input
	// gradient by more than the 10⁻⁵ the engine is held to.
	norm := func(ch int) {
		if rng.IntN(3) == 0 {
			var divs []int
			for g := 1; g*4 <= ch; g++ {
				if ch%g == 0 {
					divs = append(divs, g)
				}
			}
			if len(divs) > 0 {
				ls = append(ls, GroupNorm(divs[rng.IntN(len(divs))]))
			}
		}
	}
	// Sometimes a layer without parameters reads the input first.
	switch rng.IntN(6) {
	case 0:
		act()
	case 1:
		ls = append(ls, MaxPool2d(1+rng.IntN(2), 1))
	case 2:
		norm(c)
	}
	blocks := rng.IntN(4) // 0: a network of linear layers only
	for range blocks {
		k := 1 + rng.IntN(4)
		out := 1 + rng.IntN(8)
		ls = append(ls, Conv2d(out, k, 1+rng.IntN(2), rng.IntN(k)))
		if rng.IntN(2) == 0 {
			norm(out)
		}
		act()
		if rng.IntN(2) == 0 {
			pk := 1 + rng.IntN(3)
			if rng.IntN(2) == 0 {
				ls = append(ls, MaxPool2d(pk, 1+rng.IntN(pk)))
			} else {
				ls = append(ls, AvgPool2d(pk, 1+rng.IntN(pk)))
			}
		}
	}
	ls = append(ls, Flatten())
	act()
	for range rng.IntN(3) {
		out := 1 + rng.IntN(12)
		ls = append(ls, Linear(out))
		norm(out)
		act()
	}
	ls = append(ls, Linear(classes))
	return Spec{Name: fmt.Sprintf("random-%d", len(ls)), Layers: ls}
}
