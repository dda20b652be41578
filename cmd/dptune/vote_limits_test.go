package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/job"
)

// The clients tune --tuner vote starts hold the curator's own ε, δ and c
// as their limits, and accept a non-private final training only when the
// curator chose one.
func TestVoteClientArgsCarryTheCuratorsLimits(t *testing.T) {
	for _, final := range []string{federated.FinalDPSGD, federated.FinalNonPrivate} {
		v := job.VoteSpec{Epsilon: 2.5, Delta: 3e-7, Colluding: 2, FinalTraining: final}
		v.Data.Input.Dataset = "mnist"
		args := job.VoteClientArgs(v, "127.0.0.1:1", 2, 5, "certs")
		cmd := newVoteClientCmd()
		if args[0] != "vote" || args[1] != "client" {
			t.Fatalf("args %v", args)
		}
		if err := cmd.Flags().Parse(args[2:]); err != nil {
			t.Fatal(err)
		}
		fl := cmd.Flags()
		eps, _ := fl.GetFloat64("max-epsilon")
		delta, _ := fl.GetFloat64("max-delta")
		c, _ := fl.GetInt("colluding")
		allow, _ := fl.GetBool("allow-non-private")
		if eps != 2.5 || delta != 3e-7 || c != 2 || allow != (final == federated.FinalNonPrivate) {
			t.Errorf("%s: client limits ε %v, δ %v, c %d, non-private %v", final, eps, delta, c, allow)
		}
	}
}

// The vote's server warns, once its input is checked and before any
// client starts, when even a unanimous vote would be selected
// near-randomly (Theorem V.1 at Δ = n below 1/2), as it is at the defaults
// (σ ≈ 9.9 votes against 10 clients' votes); here an address already in
// use stops it right after.
func TestVoteWarnsNearRandom(t *testing.T) {
	data := writeMNISTDir(t, 200, 20, -1)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	serve := func(extra ...string) string {
		args := append([]string{"vote", "serve", "--insecure", "--listen", addr, "--data-dir", data, "--nominal-size", "200", "--out", filepath.Join(t.TempDir(), "v")}, extra...)
		_, out := run(t, args...)
		return out
	}
	out := serve()
	i, j := strings.Index(out, "near-random"), strings.Index(out, "--listen "+addr)
	if i < 0 || j < 0 || i > j {
		t.Errorf("no near-random warning before the listen error:\n%s", out)
	}
	if out = serve("--clients", "50", "--vote-epsilon", "4", "--epsilon", "8"); strings.Contains(out, "near-random") || !strings.Contains(out, "--listen "+addr) {
		t.Errorf("warned with 50 clients at vote ε = 4, or ran on:\n%s", out)
	}
}
