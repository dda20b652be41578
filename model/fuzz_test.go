package model

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzParseSpec: any bytes either fail to parse, fail to fit a 1×28×28 or
// 3×32×32 input with an error, or give a network whose parameters and
// activations are within the limits. Nothing panics.
func FuzzParseSpec(f *testing.F) {
	for _, s := range BuiltinSpecs() {
		b, _ := json.Marshal(s)
		f.Add(b)
	}
	f.Add([]byte(`{"name":"g","layers":[{"type":"conv2d","out":6,"kernel":3,"padding":1},{"type":"groupnorm","groups":3},{"type":"avgpool2d","kernel":2},{"type":"flatten"},{"type":"linear","out":10}]}`))
	f.Add([]byte(`{"name":"d","layers":[{"type":"scatter","j":2,"l":8},{"type":"datanorm","noise_multiplier":6,"mean_clip_norm":0.9},{"type":"flatten"},{"type":"linear","out":10}]}`))
	f.Add([]byte(`{"name":"l","layers":[{"type":"conv2d","out":4,"kernel":3},{"type":"layernorm"},{"type":"silu"},{"type":"flatten"},{"type":"gelu"},{"type":"linear","out":10}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseSpec(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, in := range [][3]int{{1, 28, 28}, {3, 32, 32}} {
			a, err := NewArch(s, in[0], in[1], in[2], 10)
			if err != nil {
				continue
			}
			ls, ts, err := a.Layers()
			if err != nil {
				t.Fatalf("NewArch accepted what Layers refuses: %v", err)
			}
			params := 0
			for _, tn := range ts {
				params += tn.Size()
			}
			if params > MaxParams || len(ls) != len(s.Layers) {
				t.Fatalf("%d parameters, %d layers for %d specs", params, len(ls), len(s.Layers))
			}
			for _, l := range ls {
				if l.OutSize() > MaxActivation || l.OutSize() < 1 {
					t.Fatalf("layer %s output %d", l.Name, l.OutSize())
				}
			}
		}
	})
}
