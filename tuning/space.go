package tuning

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Dim is one named dimension of a search space: a grid of values. Log
// dimensions are spaced (and normalised for the GP) on a log scale.
type Dim struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
	Log    bool      `json:"log"`
}

// Space is the grid of candidates: every combination of its dimensions'
// values (the first dimension varies slowest).
type Space struct {
	Name string `json:"name"`
	Dims []Dim  `json:"dims"`
}

// The dimension names the default Trainer understands.
const (
	LearningRate = "learning_rate"
	ClipNorm     = "clip_norm"
)

// LogGrid returns n values from lo, each factor times the previous.
func LogGrid(lo, factor float64, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = lo * math.Pow(factor, float64(i))
	}
	return v
}

// LinearGrid returns n values from lo in steps of step, rounded to 12
// significant digits (so 0.3·9 is 2.7, not 2.6999999999999997).
func LinearGrid(lo, step float64, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i], _ = strconv.ParseFloat(strconv.FormatFloat(lo+step*float64(i), 'g', 12, 64), 64)
	}
	return v
}

// BuiltinSpace returns the spaces dptune ships:
//
//   - "mnist-dphypo": DP-HyPO Setting E.1 — learning rate 1e-4 … 10, 16
//     values log-spaced by 10^{1/3}; clipping norm 0.3 … 6.0 in steps of 0.3
//     (20 values); 320 candidates.
//   - "cifar10-dphypo": DP-HyPO Setting E.2 — learning rate from 1e-4, 50
//     values log-spaced by 10^{0.1}; clipping norm 2 … 100 in steps of 2 (50
//     values; the paper's range [0, 100] would include a clipping norm of 0);
//     2,500 candidates.
//   - "mnist-doubling": learning rate 0.05 … 2.3 (6 values log-spaced by
//     10^{1/3}) × clipping norm 0.5, 1, 2, 4: 24 candidates around where
//     DP-SGD works on MNIST, small enough for the doubling tuner's k·|S|
//     part runs.
func BuiltinSpace(name string) (Space, bool) {
	switch name {
	case "mnist-dphypo":
		return Space{Name: name, Dims: []Dim{
			{Name: LearningRate, Values: LogGrid(1e-4, math.Cbrt(10), 16), Log: true},
			{Name: ClipNorm, Values: LinearGrid(0.3, 0.3, 20)},
		}}, true
	case "mnist-doubling":
		return Space{Name: name, Dims: []Dim{
			{Name: LearningRate, Values: LogGrid(0.05, math.Cbrt(10), 6), Log: true},
			{Name: ClipNorm, Values: []float64{0.5, 1, 2, 4}},
		}}, true
	case "cifar10-dphypo":
		return Space{Name: name, Dims: []Dim{
			{Name: LearningRate, Values: LogGrid(1e-4, math.Pow(10, 0.1), 50), Log: true},
			{Name: ClipNorm, Values: LinearGrid(2, 2, 50)},
		}}, true
	}
	return Space{}, false
}

// LoadSpace returns the builtin space called nameOrFile, or reads a JSON
// file: {"name": …, "dims": [{"name": "learning_rate", "values": [0.1, 1],
// "log": true}, …]}, where a dimension may give "min", "max" and "count"
// instead of "values" (log-spaced if "log", else linear, both ends included).
func LoadSpace(nameOrFile string) (Space, error) {
	if s, ok := BuiltinSpace(nameOrFile); ok {
		return s, nil
	}
	if !strings.HasSuffix(nameOrFile, ".json") {
		return Space{}, fmt.Errorf("unknown search space %q (want mnist-dphypo, cifar10-dphypo, mnist-doubling or a .json file)", nameOrFile)
	}
	b, err := os.ReadFile(nameOrFile)
	if err != nil {
		return Space{}, err
	}
	var raw struct {
		Name string `json:"name"`
		Dims []struct {
			Dim
			Min   *float64 `json:"min"`
			Max   *float64 `json:"max"`
			Count int      `json:"count"`
		} `json:"dims"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Space{}, fmt.Errorf("search space %s: %w", nameOrFile, err)
	}
	s := Space{Name: raw.Name}
	if s.Name == "" {
		s.Name = nameOrFile
	}
	for _, d := range raw.Dims {
		dim := d.Dim
		if len(dim.Values) == 0 && d.Min != nil && d.Max != nil && d.Count > 0 {
			lo, hi, n := *d.Min, *d.Max, d.Count
			if n == 1 {
				dim.Values = []float64{lo}
			} else if dim.Log {
				if !(lo > 0 && hi > 0) {
					return Space{}, fmt.Errorf("search space %s: log dimension %q needs positive min and max", nameOrFile, dim.Name)
				}
				dim.Values = LogGrid(lo, math.Pow(hi/lo, 1/float64(n-1)), n)
			} else {
				dim.Values = LinearGrid(lo, (hi-lo)/float64(n-1), n)
			}
		}
		s.Dims = append(s.Dims, dim)
	}
	return s, s.Check()
}

// Check returns an error if the space is empty, a dimension has no values,
// names repeat, or a value is not finite (or not positive on a log scale).
func (s Space) Check() error {
	if len(s.Dims) == 0 {
		return fmt.Errorf("search space %s has no dimensions", s.Name)
	}
	seen := map[string]bool{}
	for _, d := range s.Dims {
		if d.Name == "" || seen[d.Name] {
			return fmt.Errorf("search space %s: dimension name %q is empty or repeated", s.Name, d.Name)
		}
		seen[d.Name] = true
		if len(d.Values) == 0 {
			return fmt.Errorf("search space %s: dimension %q has no values", s.Name, d.Name)
		}
		for _, v := range d.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) || (d.Log && v <= 0) {
				return fmt.Errorf("search space %s: dimension %q has value %v", s.Name, d.Name, v)
			}
		}
	}
	return nil
}

// Size is the number of candidates.
func (s Space) Size() int {
	n := 1
	for _, d := range s.Dims {
		n *= len(d.Values)
	}
	return n
}

// Candidate is one point of a space.
type Candidate struct {
	Index  int                `json:"index"`
	Values map[string]float64 `json:"values"`
}

// At returns candidate i (0 ≤ i < Size).
func (s Space) At(i int) Candidate {
	c := Candidate{Index: i, Values: map[string]float64{}}
	for k := len(s.Dims) - 1; k >= 0; k-- {
		d := s.Dims[k]
		c.Values[d.Name] = d.Values[i%len(d.Values)]
		i /= len(d.Values)
	}
	return c
}

// Coords returns candidate i's position in [0, 1]^dims: each coordinate is
// its grid index over (count − 1) — linear in the value, or in its log for
// log dimensions, on the evenly spaced grids of this package.
func (s Space) Coords(i int) []float64 {
	x := make([]float64, len(s.Dims))
	for k := len(s.Dims) - 1; k >= 0; k-- {
		n := len(s.Dims[k].Values)
		if n > 1 {
			x[k] = float64(i%n) / float64(n-1)
		}
		i /= n
	}
	return x
}
