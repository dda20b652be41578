package audit

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/privacy/accounting"
)

// Every protocol is registered once, in the order people read them, with
// what a caller needs: help, a check, a builder, and fields that name
// Settings' own; a DP-SGD game's bounds name its flags once each.
func TestGamesRegistered(t *testing.T) {
	want := []string{"reduced", "dpsgd", "tuner", "gp", "grid", "natural", "score", "above-threshold"}
	if got := Names(nil); !slices.Equal(got, want) {
		t.Fatalf("Names(nil) = %v, want %v", got, want)
	}
	if got := Either(nil); got != "reduced, dpsgd, tuner, gp, grid, natural, score or above-threshold" {
		t.Errorf("Either(nil) = %q", got)
	}
	settings := reflect.TypeOf(Settings{})
	for _, g := range Games(nil) {
		if g.Help == "" || g.Check == nil || g.New == nil || len(g.Fields) == 0 {
			t.Errorf("%s: incomplete registration %+v", g.Name, g)
		}
		for _, f := range g.Fields {
			if _, ok := settings.FieldByName(f); !ok {
				t.Errorf("%s: field %s is not one of Settings'", g.Name, f)
			}
		}
		for f := range g.Refuses {
			if _, ok := settings.FieldByName(f); !ok || g.Uses(f) {
				t.Errorf("%s refuses %s, which is not a Settings field it does not use", g.Name, f)
			}
		}
		seen := map[string]bool{}
		for _, b := range g.Bounds {
			if seen[b.Flag] || b.Check == nil {
				t.Errorf("%s: bound %q twice or without a check", g.Name, b.Flag)
			}
			seen[b.Flag] = true
		}
		if g.DPSGD != (len(g.Bounds) == 3) {
			t.Errorf("%s: DP-SGD %v with bounds %d", g.Name, g.DPSGD, len(g.Bounds))
		}
	}
	if Either(func(g Game) bool { return len(g.Views) > 0 }) != "dpsgd" {
		t.Error("only dpsgd lets the adversary's view be chosen")
	}
}

// A game's settings are checked before any work with one-line errors that
// wrap ErrInvalid, and the ranges a command line checks give the same
// words under its own label.
func TestGameChecks(t *testing.T) {
	for _, c := range []struct {
		game string
		s    Settings
		want string
	}{
		{"reduced", Settings{Mu: 100, Repetitions: accounting.FixedRepetitions(2)}, "μ = 100 is outside (0, 10]"},
		{"reduced", Settings{Mu: 1, Repetitions: accounting.FixedRepetitions(1 << 21)}, "2097152 runs is above 1048576"},
		{"dpsgd", Settings{Size: MaxCanarySize + 1}, "size 60001 is outside [1, 60000]"},
		{"natural", Settings{NoiseMultiplier: -1}, "noise multiplier -1 is outside"},
		{"score", Settings{ScoreNoise: 1e300}, "score noise 1e+300 is outside (0, 1e+09], the discrete Gaussian sampler's range"},
	} {
		g, _ := Lookup(c.game)
		err := g.Check(c.s)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line with %q wrapping ErrInvalid", c.game, err, c.want)
		}
	}
	g, _ := Lookup("score")
	if err := g.Bounds[0].Check("--score-noise", 1e300); err == nil || err.Error() != "--score-noise 1e+300 is outside (0, 1e+09], the discrete Gaussian sampler's range" {
		t.Errorf("score's bound: %v", err)
	}
	g, _ = Lookup("dpsgd")
	if _, _, err := g.New(Settings{NoiseMultiplier: 1, SamplingRate: 1, ClipNorm: 1e300, Steps: 1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("dpsgd with C = 1e300: %v, want ErrInvalid", err)
	}
}

// The claims of the reduced game are Algorithm 3's always and RDP's for
// a Poisson number of runs, and their ε are finite and positive.
func TestReducedClaims(t *testing.T) {
	g, _ := Lookup("reduced")
	s := Settings{Mu: 1, Repetitions: accounting.PoissonRepetitions(3)}
	if err := g.Check(s); err != nil {
		t.Fatal(err)
	}
	p, claims, err := g.New(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(ReducedTuning); !ok {
		t.Errorf("protocol %T", p)
	}
	eps, err := claims.Epsilons(context.Background(), 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 2 || !(eps["rdp"] > 0) || !(eps["xiang-o"] > 0) {
		t.Errorf("ε_U %v, want rdp and xiang-o", eps)
	}
}
