package tuning

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hugeSpaceJSON is 30 dimensions of 8 values: 8^30 = 2^90 candidates.
func hugeSpaceJSON() string {
	dims := make([]string, 30)
	for i := range dims {
		dims[i] = fmt.Sprintf(`{"name":"d%d","values":[1,2,3,4,5,6,7,8]}`, i)
	}
	return `{"name":"huge","dims":[` + strings.Join(dims, ",") + `]}`
}

func TestSpaceCap(t *testing.T) {
	_, err := ParseSpace("huge.json", []byte(hugeSpaceJSON()))
	if err == nil || !strings.Contains(err.Error(), "MaxCandidates") || !strings.Contains(err.Error(), "1048576") {
		t.Fatalf("30 × 8 values: %v", err)
	}
	s := Space{Name: "huge"}
	for i := 0; i < 30; i++ {
		s.Dims = append(s.Dims, Dim{Name: fmt.Sprint("d", i), Values: LinearGrid(1, 1, 8)})
	}
	if err := s.Check(); err == nil || !strings.Contains(err.Error(), "MaxCandidates") {
		t.Errorf("Check: %v", err)
	}
	if n, err := s.CheckedSize(); err == nil {
		t.Errorf("CheckedSize = %d", n)
	}
	if n := s.Size(); n != math.MaxInt {
		t.Errorf("Size = %d, want saturation at math.MaxInt", n)
	}
	// Exactly at the cap is allowed, one more value is not.
	at := Space{Name: "at", Dims: []Dim{{Name: "a", Values: make([]float64, 1<<10)}, {Name: "b", Values: make([]float64, 1<<10)}}}
	if n, err := at.CheckedSize(); err != nil || n != MaxCandidates {
		t.Errorf("2^10 × 2^10: %d, %v", n, err)
	}
	at.Dims[1].Values = append(at.Dims[1].Values, 0)
	if _, err := at.CheckedSize(); err == nil {
		t.Error("2^10 × (2^10 + 1) accepted")
	}
}

func TestSpaceHugeCountRejectedBeforeAllocation(t *testing.T) {
	in := []byte(`{"name":"x","dims":[{"name":"learning_rate","min":0.1,"max":1,"count":100000000000}]}`)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := ParseSpace("x.json", in)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), `"learning_rate"`) || !strings.Contains(err.Error(), "100000000000") {
		t.Fatalf("count 1e11: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("allocated %d bytes before refusing", alloc)
	}
	if elapsed > time.Second {
		t.Errorf("took %v", elapsed)
	}
	// The product of the counts is capped before any grid is built too.
	in = []byte(`{"dims":[{"name":"a","min":1,"max":2,"count":1048576},{"name":"b","min":1,"max":2,"count":1048576},{"name":"c","min":1,"max":2,"count":1048576}]}`)
	runtime.ReadMemStats(&before)
	_, err = ParseSpace("x.json", in)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "MaxCandidates") {
		t.Fatalf("2^60 candidates: %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("allocated %d bytes before refusing", alloc)
	}
}

func TestParseSpaceRejects(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"dims":[{"name":"a","values":[1],"bogus":1}]}`, "unknown field"},
		{`{"dims":[{"name":"a","values":[1,2],"min":1,"max":2,"count":2}]}`, "both"},
		{`{"dims":[{"name":"a","values":[1,2],"count":2}]}`, "both"},
		{`{"dims":[{"name":"a","min":1,"max":2}]}`, "needs all"},
		{`{"dims":[{"name":"a","min":1,"count":2}]}`, "needs all"},
		{`{"dims":[{"name":"a","count":2}]}`, "needs all"},
		{`{"dims":[{"name":"a","min":2,"max":1,"count":2}]}`, "greater than max"},
		{`{"dims":[{"name":"a","min":1,"max":2,"count":0}]}`, "count 0"},
		{`{"dims":[{"name":"a","min":1,"max":2,"count":-3}]}`, "count -3"},
		{`{"dims":[{"name":"a","min":1,"max":2,"count":1048577}]}`, "count 1048577"},
		{`{"dims":[{"name":"a","min":1,"max":1e400,"count":2}]}`, "max"},
		{`{"dims":[{"name":"a","min":0,"max":1,"count":2,"log":true}]}`, "positive"},
		{`{"dims":[{"name":"a","min":-1e308,"max":1e308,"count":3}]}`, "value"},
		{`{"dims":[{"name":"a","values":[1]}]} {"x":1}`, "after the JSON object"},
		{`{"dims":[{"name":"a","values":[1]}]} x`, "after the JSON object"},
		{`{"dims":[{"name":"a","values":[]}]}`, "no values"},
		{`{"dims":[{"name":"a"}]}`, "no values"},
		{`{"dims":[]}`, "no dimensions"},
		{`{"dims":[{"name":"a","values":[1]},{"name":"a","values":[2]}]}`, "repeated"},
		{`{"dims":[{"name":"a","values":[1,-1],"log":true}]}`, "value -1"},
		{`{"name":"x\u001b[2Jy","dims":[{"name":"a","values":[1]}]}`, "control characters"},
		{`{"name":"x\u0000y","dims":[{"name":"a","values":[1]}]}`, "control characters"},
		{`{"name":"t.json x\u009by","dims":[{"name":"a","values":[1]}]}`, "control characters"},
		{`{"name":"t.json","dims":[{"name":"a\u001b","values":[1]}]}`, "control characters"},
		{`{"dims":`, "EOF"},
		{``, "EOF"},
		{`{"dims":[{"name":"n","choices":["a","b"],"values":[0,1]}]}`, "gives \"choices\" with"},
		{`{"dims":[{"name":"n","choices":["a"],"min":0,"max":1,"count":2}]}`, "gives \"choices\" with"},
		{`{"dims":[{"name":"n","choices":["a"],"log":true}]}`, "gives \"choices\" with"},
		{`{"dims":[{"name":"n","choices":[]}]}`, "no values"},
		{`{"dims":[{"name":"n","choices":["a","a"]}]}`, `choice "a" is empty, repeated`},
		{`{"dims":[{"name":"n","choices":[""]}]}`, `choice "" is empty, repeated`},
		{`{"dims":[{"name":"n","choices":["a\u001b[2J"]}]}`, `holds control characters`},
	} {
		if _, err := ParseSpace("t.json", []byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "t.json") {
			t.Errorf("%s: %v, want an error naming t.json and containing %q", c.in, err, c.want)
		}
	}
}

func TestParseSpaceGrids(t *testing.T) {
	s, err := ParseSpace("g.json", []byte(`{"dims":[{"name":"learning_rate","min":0.01,"max":1,"count":3,"log":true},
		{"name":"clip_norm","min":0.3,"max":2.7,"count":9}, {"name":"one","min":5,"max":7,"count":1}]} `+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "g.json" || s.Size() != 27 {
		t.Fatalf("%+v", s)
	}
	lr, clip := s.Dims[0].Values, s.Dims[1].Values
	if math.Abs(lr[0]-0.01) > 1e-12 || math.Abs(lr[1]-0.1) > 1e-12 || math.Abs(lr[2]-1) > 1e-12 || !s.Dims[0].Log {
		t.Errorf("log grid %v", lr)
	}
	if clip[0] != 0.3 || clip[8] != 2.7 || len(clip) != 9 {
		t.Errorf("linear grid %v", clip)
	}
	if v := s.Dims[2].Values; len(v) != 1 || v[0] != 5 {
		t.Errorf("count 1: %v", v)
	}
}

func TestLoadSpace(t *testing.T) {
	_, err := LoadSpace("nope")
	for _, name := range []string{"mnist-dphypo", "cifar10-dphypo", "mnist-doubling"} {
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("unknown builtin: %v does not list %s", err, name)
		}
	}
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(`{"dims":[{"name":"learning_rate","values":[0.1,1]},{"name":"clip_norm","values":[1]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSpace(file)
	if err != nil || s.Name != file || s.Size() != 2 || CheckDPSGDSpace(s) != nil {
		t.Errorf("%+v, %v", s, err)
	}
	if _, err := LoadSpace(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("missing file accepted")
	}
}

func TestCheckDPSGDSpace(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"dims":[{"name":"learning_rate","values":[-0.1,1]}]}`, `search space s.json: dimension "learning_rate" has value -0.1: must be positive and finite`},
		{`{"dims":[{"name":"learning_rate","values":[0]}]}`, `dimension "learning_rate" has value 0: must be positive and finite`},
		{`{"dims":[{"name":"learning_rate","values":[0.1]},{"name":"clip_norm","values":[1,-2]}]}`, `dimension "clip_norm" has value -2: must be positive and finite`},
		{`{"dims":[{"name":"learning_rate","min":-1,"max":1,"count":3}]}`, `dimension "learning_rate" has value -1`},
		{`{"dims":[{"name":"lr","values":[0.1]}]}`, `unknown dimension "lr" (the DP-SGD trainer knows "batch_size", "clip_norm", "epochs", "learning_rate", "lr_schedule", "momentum", "network")`},
		{`{"dims":[{"name":"momentum","values":[0.9,1]}]}`, `dimension "momentum" has value 1: must be in [0, 1)`},
		{`{"dims":[{"name":"batch_size","values":[256,511.5]}]}`, `dimension "batch_size" has value 511.5: must be a whole number`},
		{`{"dims":[{"name":"epochs","values":[0]}]}`, `dimension "epochs" has value 0: must be a whole number`},
		{`{"dims":[{"name":"epochs","choices":["ten"]}]}`, `dimension "epochs" is numeric`},
		{`{"dims":[{"name":"network","values":[0,1]}]}`, `dimension "network" is categorical`},
		{`{"dims":[{"name":"lr_schedule","choices":["constant","step"]}]}`, `dimension "lr_schedule": unknown learning-rate schedule "step"`},
		{`{"dims":[{"name":"batch_size","min":1,"max":20,"count":20},{"name":"epochs","min":1,"max":20,"count":20}]}`, `more than 256 combinations of batch_size, epochs, network`},
	} {
		s, err := ParseSpace("s.json", []byte(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if err := CheckDPSGDSpace(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.in, err, c.want)
		}
	}
	// An infinite value is Check's error, still named.
	s := Space{Name: "inf", Dims: []Dim{{Name: ClipNorm, Values: []float64{math.Inf(1)}}}}
	if err := CheckDPSGDSpace(s); err == nil || !strings.Contains(err.Error(), "+Inf") {
		t.Errorf("infinite clip: %v", err)
	}
}

func TestBuiltinSpacesPassChecks(t *testing.T) {
	for name, size := range map[string]int{"mnist-dphypo": 320, "cifar10-dphypo": 2500, "mnist-doubling": 24, "scatter-mnist": 64, "scatter-cifar10": 64} {
		s, ok := BuiltinSpace(name)
		if !ok {
			t.Fatalf("no builtin %s", name)
		}
		if err := s.Check(); err != nil {
			t.Errorf("%s: Check: %v", name, err)
		}
		if err := CheckDPSGDSpace(s); err != nil {
			t.Errorf("%s: CheckDPSGDSpace: %v", name, err)
		}
		if n, err := s.CheckedSize(); err != nil || n != size || s.Size() != size {
			t.Errorf("%s: %d candidates (%v), want %d", name, n, err, size)
		}
	}
}
