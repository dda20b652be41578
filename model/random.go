package model

import (
	"fmt"
	"math/rand/v2"
)

// RandomArch returns a random valid network on a random small input (1–3
// channels, 5–12 pixels a side, 2–5 classes): convolutions, flatten and
// linear layers at random depths, kernel sizes, strides and paddings,
// with every registered activation, normalisation and pooling kind drawn
// at random places (randomKind), for tests that check the gorgonia graph
// and dpsgd's engine on shapes nobody wrote by hand. It draws from rng
// only, so a seed reproduces it.
func RandomArch(rng *rand.Rand) Arch {
	for {
		c, h, w, classes := 1+rng.IntN(3), 5+rng.IntN(8), 5+rng.IntN(8), 2+rng.IntN(4)
		if a, err := NewArch(randomSpec(rng, c, classes), c, h, w, classes); err == nil {
			return a
		}
	}
}

// kindsOf returns the registered kinds RandomArch places in role r, in
// type order.
func kindsOf(r role) []randomKind {
	var out []randomKind
	for _, t := range LayerTypes() {
		if k, ok := layerKinds[t].(randomKind); ok && k.role() == r {
			out = append(out, k)
		}
	}
	return out
}

func randomSpec(rng *rand.Rand, c, classes int) Spec {
	var ls []LayerSpec
	acts, norms, pools, inputs := kindsOf(roleActivation), kindsOf(roleNorm), kindsOf(rolePool), kindsOf(roleInput)
	// draw appends a random layer of one of ks on c channels, if it takes
	// them.
	draw := func(ks []randomKind, c int) {
		if len(ks) == 0 {
			return
		}
		if l, ok := ks[rng.IntN(len(ks))].random(rng, c); ok {
			ls = append(ls, l)
		}
	}
	act := func(c int) { // none a third of the time
		if rng.IntN(3) > 0 {
			draw(acts, c)
		}
	}
	norm := func(c int) { // a third of the time
		if rng.IntN(3) == 0 {
			draw(norms, c)
		}
	}
	// Sometimes a layer without parameters reads the input first.
	switch rng.IntN(7) {
	case 0:
		draw(acts, c)
	case 1:
		draw(pools, c)
	case 2:
		norm(c)
	case 3:
		draw(inputs, c)
	}
	blocks := rng.IntN(4) // 0: a network of linear layers only
	for range blocks {
		k := 1 + rng.IntN(4)
		out := 1 + rng.IntN(8)
		ls = append(ls, Conv2d(out, k, 1+rng.IntN(2), rng.IntN(k)))
		if rng.IntN(2) == 0 {
			norm(out)
		}
		act(out)
		if rng.IntN(2) == 0 {
			draw(pools, out)
		}
	}
	ls = append(ls, Flatten())
	act(0)
	for range rng.IntN(3) {
		out := 1 + rng.IntN(12)
		ls = append(ls, Linear(out))
		norm(out)
		act(out)
	}
	ls = append(ls, Linear(classes))
	return Spec{Name: fmt.Sprintf("random-%d", len(ls)), Layers: ls}
}
