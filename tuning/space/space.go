// Package space is the vocabulary of hyperparameter search shared by the
// tuners (package tuning) and DP-Hype's protocol (package federated): a
// search Space, a grid of named dimensions (Dim); its points (Candidate);
// and ParseSpace, which reads one from JSON. It imports nothing of dptune's
// but its internal helpers, so that both may import it.
//
// A space's candidates are every combination of its dimensions' values, the
// first dimension varying slowest: candidate i is the same point for every
// reader (a tuner, a vote's clients), and its JSON is the same wherever it
// travels.
package space

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/dptune/dptune/internal/textsafe"
)

// Dim is one named dimension of a search space: a grid of values. Log
// dimensions are spaced (and normalised for the GP) on a log scale.
//
// A categorical dimension (a network, a learning-rate schedule) has
// Choices, its values' names, and Values 0, 1, …, len(Choices)−1: a
// candidate's Values hold the index and its Labels the name. Its values
// have no order: the GP places them at the corners of a simplex (Coords).
type Dim struct {
	Name    string    `json:"name"`
	Values  []float64 `json:"values"`
	Log     bool      `json:"log"`
	Choices []string  `json:"choices,omitempty"`
}

// Categorical returns the dimension called name with the given choices.
func Categorical(name string, choices ...string) Dim {
	v := make([]float64, len(choices))
	for i := range v {
		v[i] = float64(i)
	}
	return Dim{Name: name, Values: v, Choices: choices}
}

// Space is the grid of candidates: every combination of its dimensions'
// values (the first dimension varies slowest).
type Space struct {
	Name string `json:"name"`
	Dims []Dim  `json:"dims"`
}

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

// MaxCandidates is the largest number of candidates a space may have. Every
// tuner keeps per-candidate state: the GP tuner's posterior density over the
// space is O(n) per step (its n×n kernel is only built for the observed
// points, but the density is over all n), the random-stop tuner draws indices
// in [0, n), and a partitioned tuner trains k·n part runs and keeps a k·n
// score table. A grid of more than 2^20 points is a mistake (30 dimensions of 8
// values is 8^30), not a search; the cap also keeps Size from overflowing
// int.
const MaxCandidates = 1 << 20

// rawDim is a dimension as the JSON file gives it: "values", all of "min",
// "max" and "count", or "choices".
type rawDim struct {
	Name    string    `json:"name"`
	Values  []float64 `json:"values"`
	Log     bool      `json:"log"`
	Min     *float64  `json:"min"`
	Max     *float64  `json:"max"`
	Count   *int      `json:"count"`
	Choices []string  `json:"choices"`
}

// ParseSpace parses the JSON text b of a search space: one object
// {"name": …, "dims": [{"name": "learning_rate", "values": [0.1, 1],
// "log": true}, …]}, where a dimension gives either "values" or all of
// "min", "max" and "count" (count values from min to max, both ends
// included, log-spaced if "log", else linear; a count of 1 gives min), or
// "choices", the names of a categorical dimension's values (e.g.
// {"name": "network", "choices": ["scatter-linear-mnist", "scatter-cnn-mnist"]}). name
// (the file name) labels the errors and is the space's name when the JSON
// gives none.
//
// It returns an error for invalid JSON, unknown fields, data after the
// object, a dimension giving both "values" and min/max/count or only some of
// min/max/count, min > max, a non-finite min or max, non-positive min or max
// on a log dimension, a count outside [1, MaxCandidates], "choices" beside
// any other way of giving values or beside "log", more than
// MaxCandidates candidates in all (checked before any grid is built), and
// whatever Check rejects. It does not check the dimension names against a
// trainer (see tuning.CheckDPSGDSpace).
func ParseSpace(name string, b []byte) (Space, error) {
	var raw struct {
		Name string   `json:"name"`
		Dims []rawDim `json:"dims"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Space{}, fmt.Errorf("search space %s: %w", name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Space{}, fmt.Errorf("search space %s: data after the JSON object", name)
	}
	s := Space{Name: raw.Name}
	if s.Name == "" {
		s.Name = name
	}
	if !textsafe.Printable(s.Name) {
		return Space{}, fmt.Errorf("search space %s: name %q holds control characters or invalid UTF-8", name, s.Name)
	}
	if len(raw.Dims) == 0 {
		return Space{}, fmt.Errorf("search space %s has no dimensions", s.Name)
	}
	// First pass: validate every dimension and bound the product of the
	// counts, before allocating any grid.
	total := 1
	for _, d := range raw.Dims {
		grid := d.Min != nil || d.Max != nil || d.Count != nil
		var n int
		switch {
		case d.Choices != nil && (d.Values != nil || grid || d.Log):
			return Space{}, fmt.Errorf("search space %s: categorical dimension %q gives \"choices\" with \"values\", min/max/count or \"log\"", s.Name, d.Name)
		case d.Choices != nil:
			n = len(d.Choices)
		case d.Values != nil && grid:
			return Space{}, fmt.Errorf("search space %s: dimension %q gives both \"values\" and min/max/count", s.Name, d.Name)
		case !grid:
			n = len(d.Values)
		case d.Min == nil || d.Max == nil || d.Count == nil:
			return Space{}, fmt.Errorf("search space %s: dimension %q needs all of \"min\", \"max\" and \"count\" (or \"values\")", s.Name, d.Name)
		default:
			lo, hi, c := *d.Min, *d.Max, *d.Count
			switch {
			case c < 1 || c > MaxCandidates:
				return Space{}, fmt.Errorf("search space %s: dimension %q has count %d: must be between 1 and %d", s.Name, d.Name, c, MaxCandidates)
			case !isFinite(lo) || !isFinite(hi):
				return Space{}, fmt.Errorf("search space %s: dimension %q has min %v and max %v: must be finite", s.Name, d.Name, lo, hi)
			case lo > hi:
				return Space{}, fmt.Errorf("search space %s: dimension %q has min %v greater than max %v", s.Name, d.Name, lo, hi)
			case d.Log && !(lo > 0):
				return Space{}, fmt.Errorf("search space %s: log dimension %q needs positive min and max, has min %v", s.Name, d.Name, lo)
			}
			n = c
		}
		if n == 0 {
			return Space{}, fmt.Errorf("search space %s: dimension %q has no values", s.Name, d.Name)
		}
		if n > MaxCandidates/total {
			return Space{}, fmt.Errorf("search space %s: more than MaxCandidates = %d candidates (at dimension %q, %d values)", s.Name, MaxCandidates, d.Name, n)
		}
		total *= n
	}
	for _, d := range raw.Dims {
		dim := Dim{Name: d.Name, Values: d.Values, Log: d.Log}
		if d.Choices != nil {
			dim = Categorical(d.Name, d.Choices...)
		}
		if d.Count != nil {
			lo, hi, n := *d.Min, *d.Max, *d.Count
			switch {
			case n == 1:
				dim.Values = []float64{lo}
			case d.Log:
				dim.Values = LogGrid(lo, math.Pow(hi/lo, 1/float64(n-1)), n)
			default:
				dim.Values = LinearGrid(lo, (hi-lo)/float64(n-1), n)
			}
		}
		s.Dims = append(s.Dims, dim)
	}
	return s, s.Check()
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Check returns an error if the space is empty, its name or a dimension's
// is not printable text (control bytes such as NUL or ESC, invalid UTF-8:
// names go to the terminal), a dimension has no values, names repeat, a
// value is not finite (or not positive on a log scale), or the space has
// more than MaxCandidates candidates.
func (s Space) Check() error {
	if !textsafe.Printable(s.Name) {
		return fmt.Errorf("search space name %q holds control characters or invalid UTF-8", s.Name)
	}
	for _, d := range s.Dims {
		if !textsafe.Printable(d.Name) {
			return fmt.Errorf("search space %s: dimension name %q holds control characters or invalid UTF-8", s.Name, d.Name)
		}
	}
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
			if !isFinite(v) || (d.Log && v <= 0) {
				return fmt.Errorf("search space %s: dimension %q has value %v", s.Name, d.Name, v)
			}
		}
		if err := d.checkChoices(); err != nil {
			return fmt.Errorf("search space %s: %w", s.Name, err)
		}
	}
	_, err := s.CheckedSize()
	return err
}

// checkChoices returns an error if a categorical dimension's choices are
// empty, repeated or not printable, or its values are not their indices.
func (d Dim) checkChoices() error {
	if d.Choices == nil {
		return nil
	}
	if d.Log || len(d.Values) != len(d.Choices) {
		return fmt.Errorf("categorical dimension %q must have one value per choice and no log scale", d.Name)
	}
	seen := map[string]bool{}
	for i, c := range d.Choices {
		if c == "" || seen[c] || !textsafe.Printable(c) {
			return fmt.Errorf("categorical dimension %q: choice %q is empty, repeated or holds control characters", d.Name, c)
		}
		seen[c] = true
		if d.Values[i] != float64(i) {
			return fmt.Errorf("categorical dimension %q: value %d is %v, want its index", d.Name, i, d.Values[i])
		}
	}
	return nil
}

// CheckedSize returns the number of candidates, the product of the
// dimensions' value counts, or an error if the space has no dimensions, a
// dimension has no values, or the product exceeds MaxCandidates (checked
// before each multiplication, so it never overflows).
func (s Space) CheckedSize() (int, error) {
	if len(s.Dims) == 0 {
		return 0, fmt.Errorf("search space %s has no dimensions", s.Name)
	}
	n := 1
	for _, d := range s.Dims {
		m := len(d.Values)
		if m == 0 {
			return 0, fmt.Errorf("search space %s: dimension %q has no values", s.Name, d.Name)
		}
		if m > MaxCandidates/n {
			return 0, fmt.Errorf("search space %s: more than MaxCandidates = %d candidates (at dimension %q, %d values)", s.Name, MaxCandidates, d.Name, m)
		}
		n *= m
	}
	return n, nil
}

// Size is the number of candidates of a space that passed Check: the product
// of the dimensions' value counts. It saturates at math.MaxInt instead of
// overflowing (Check rejects any space larger than MaxCandidates).
func (s Space) Size() int {
	n := 1
	for _, d := range s.Dims {
		m := len(d.Values)
		if m != 0 && n > math.MaxInt/m {
			return math.MaxInt
		}
		n *= m
	}
	return n
}

// Candidate is one point of a space: its value on every dimension, and on
// a categorical dimension also the choice's name (Labels).
type Candidate struct {
	Index  int                `json:"index"`
	Values map[string]float64 `json:"values"`
	Labels map[string]string  `json:"labels,omitempty"`
}

// At returns candidate i (0 ≤ i < Size).
func (s Space) At(i int) Candidate {
	c := Candidate{Index: i, Values: map[string]float64{}}
	for k := len(s.Dims) - 1; k >= 0; k-- {
		d := s.Dims[k]
		j := i % len(d.Values)
		c.Values[d.Name] = d.Values[j]
		if d.Choices != nil {
			if c.Labels == nil {
				c.Labels = map[string]string{}
			}
			c.Labels[d.Name] = d.Choices[j]
		}
		i /= len(d.Values)
	}
	return c
}

// Coords returns candidate i's position for the GP: on an ordered
// dimension one coordinate in [0, 1], its grid index over (count − 1) —
// linear in the value, or in its log for log dimensions, on the evenly
// spaced grids of this package; on a categorical dimension of n choices n
// coordinates, the choice's one-hot vector over √2, so that any two choices
// are at distance 1, as the two ends of an ordered dimension are.
func (s Space) Coords(i int) []float64 {
	var x []float64
	for k := len(s.Dims) - 1; k >= 0; k-- {
		d := s.Dims[k]
		n := len(d.Values)
		j := i % n
		i /= n
		switch {
		case d.Choices != nil:
			block := make([]float64, n)
			block[j] = 1 / math.Sqrt2
			x = append(block, x...)
		case n > 1:
			x = append([]float64{float64(j) / float64(n-1)}, x...)
		default:
			x = append([]float64{0}, x...)
		}
	}
	return x
}
