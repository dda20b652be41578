package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dptune/dptune/federated"
	"github.com/dptune/dptune/federated/pki"
	"github.com/dptune/dptune/job"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// TestMain lets a test start this binary as dptune itself: with
// DPTUNE_TEST_MAIN=1 it runs main with the given arguments (the vote tests'
// client processes).
// childSetup, if not nil, runs in a child started with DPTUNE_TEST_MAIN=1
// before main (a platform's test file sets it).
var childSetup func()

func TestMain(m *testing.M) {
	if os.Getenv("DPTUNE_TEST_MAIN") == "1" {
		if childSetup != nil {
			childSetup()
		}
		main()
		os.Exit(0)
	}
	// Checkpoints are authenticated under a key kept outside any output
	// directory: the tests' key lives in a directory of their own, never
	// in the user's configuration.
	if os.Getenv("DPTUNE_CHECKPOINT_KEY") == "" {
		dir, err := os.MkdirTemp("", "dptune-test-key-")
		if err != nil {
			panic(err)
		}
		os.Setenv("DPTUNE_CHECKPOINT_KEY", filepath.Join(dir, "checkpoint.key"))
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// writeMNIST writes n training and n/4 test images in MNIST's IDX format to
// a new directory: noise with a label-dependent bright row, enough to learn.
func writeMNIST(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(1, 2))
	write := func(prefix string, n int) {
		img := binary.BigEndian.AppendUint32(nil, 2051)
		img = binary.BigEndian.AppendUint32(img, uint32(n))
		img = binary.BigEndian.AppendUint32(img, 28)
		img = binary.BigEndian.AppendUint32(img, 28)
		lab := binary.BigEndian.AppendUint32(nil, 2049)
		lab = binary.BigEndian.AppendUint32(lab, uint32(n))
		for range n {
			y := r.IntN(10)
			lab = append(lab, byte(y))
			for p := range 28 * 28 {
				v := byte(r.IntN(64))
				if p/28 == 2*y+4 {
					v = 255
				}
				img = append(img, v)
			}
		}
		for name, b := range map[string][]byte{prefix + "-images-idx3-ubyte": img, prefix + "-labels-idx1-ubyte": lab} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	write("train", n)
	write("t10k", n/4)
	return dir
}

// killedClientVote runs a vote with real `dptune vote client` processes on
// loopback and SIGKILLs one of them as soon as the secure sum's round 1
// (the key shares) has closed: the client is then training its candidates
// and has not yet sent its noisy vote, so the server must unmask it as a
// dropout. The connections are mutual TLS with certificates from a fresh
// CA, or with insecure plaintext on loopback.
func killedClientVote(t *testing.T, clients int, dropout float64, insecure bool) (*job.Release, error) {
	t.Helper()
	dir := writeMNIST(t, 480)
	src, err := job.Dataset("mnist", dir)
	if err != nil {
		t.Fatal(err)
	}
	src = src.WithNominalSize(480)
	space := tuning.Space{Name: "two", Dims: []tuning.Dim{{Name: federated.LearningRate, Values: []float64{1e-3, 0.1}}}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	certs := t.TempDir()
	if err := pki.Generate(certs, clients, nil, false); err != nil {
		t.Fatal(err)
	}
	tr := job.VoteTransport{Cert: filepath.Join(certs, "server.pem"), Key: filepath.Join(certs, "server.key"), CA: filepath.Join(certs, "ca.pem")}
	if insecure {
		tr = job.VoteTransport{Insecure: true}
	}
	var procs []*exec.Cmd
	for i := range clients {
		args := []string{"vote", "client", "--server", lis.Addr().String(), "--dataset", "mnist", "--data-dir", dir,
			"--tls-cert", filepath.Join(certs, fmt.Sprintf("client-%d.pem", i+1)), "--tls-key", filepath.Join(certs, fmt.Sprintf("client-%d.key", i+1)), "--ca", filepath.Join(certs, "ca.pem")}
		if insecure {
			args = append(args[:8], "--insecure")
		}
		args = append(args, "--max-epsilon", "20") // the spec's ε; the clients' default is 10
		p := exec.CommandContext(ctx, os.Args[0], args...)
		p.Env = append(os.Environ(), "DPTUNE_TEST_MAIN=1")
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, p)
	}
	var once sync.Once
	killed := make(chan error, 1)
	spec := job.VoteSpec{Data: src, Space: space, Epsilon: 20, Delta: 1e-5, VoteEpsilon: 5, Clients: clients, VotesPerClient: 1,
		Dropout: dropout, LocalEpochs: 1, BatchSize: 64, FinalTraining: federated.FinalDPSGD, Rounds: 1, ClipNorm: 1, Seed: 7,
		Transport: tr,
		Progress: func(e federated.Event) {
			if e.Stage == "shares" {
				once.Do(func() {
					err := procs[0].Process.Kill()
					if err == nil {
						_, err = procs[0].Process.Wait()
					}
					killed <- err
				})
			}
		}}
	rel, err := job.RunVote(ctx, spec, lis)
	select {
	case kerr := <-killed:
		if kerr != nil {
			t.Fatalf("killing a client: %v", kerr)
		}
	default:
		t.Fatal("no client was killed: round 1 never closed")
	}
	for i, p := range procs[1:] {
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Errorf("client process %d did not exit after the vote ended", i+2)
			p.Process.Kill()
		}
	}
	return rel, err
}

// With f = 1/4 of 4 clients tolerated, killing one client mid-protocol
// leaves 3 = ⌈(1−f)n⌉: the round completes with their sum, the ledger's
// vote event has 3 summands, and the vote's ε stays within its target.
func TestVoteSurvivesKilledClientProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts client processes")
	}
	rel, err := killedClientVote(t, 4, 0.25, false)
	if err != nil {
		t.Fatal(err)
	}
	rep := rel.Report.(*job.VoteReport)
	if rep.Survivors != 3 || rep.Clients != 4 {
		t.Fatalf("survivors %d of %d, want 3 of 4", rep.Survivors, rep.Clients)
	}
	ev, ok := rep.Ledger.Entries[0].Event.(accounting.DistributedDiscreteGaussian)
	if !ok || ev.Summands != 3 || !strings.Contains(rep.Ledger.Entries[0].Label, "3 of 4") {
		t.Fatalf("ledger's vote entry %q: %#v", rep.Ledger.Entries[0].Label, rep.Ledger.Entries[0].Event)
	}
	if rep.VoteEpsilon > 5*(1+1e-6) {
		t.Fatalf("vote ε = %v with 3 survivors, above the target 5", rep.VoteEpsilon)
	}
	if rep.Epsilon == nil || *rep.Epsilon > 20*(1+1e-6) {
		t.Fatalf("total ε %v, want ≤ 20", rep.Epsilon)
	}
	if rep.Traffic.MaxSent <= 0 || rep.Traffic.TotalSent < 3*rep.Traffic.MaxSent/2 {
		t.Fatalf("traffic %+v", rep.Traffic)
	}
}

// With f = 0 the same kill aborts the round: RunVote returns ErrAborted and
// nothing is released. (Over --insecure on loopback, which this also
// exercises.)
func TestVoteAbortsOnKilledClientProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts client processes")
	}
	rel, err := killedClientVote(t, 3, 0, true)
	if !errors.Is(err, federated.ErrAborted) || rel != nil {
		t.Fatalf("release %v, error %v; want ErrAborted and nothing", rel, err)
	}
}

// `dptune tune --tuner vote --final-training dp-fedavg` end to end with
// real client processes (started with --part i/n): every FedAvg round goes
// through the secure sum, the ledger holds the vote and one client-level
// entry per round, and the client-level total meets --epsilon.
func TestTuneVoteDPFedAvgProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts client processes")
	}
	dir := writeMNIST(t, 480)
	space := filepath.Join(t.TempDir(), "two.json")
	if err := os.WriteFile(space, []byte(`{"name": "two", "dims": [{"name": "learning_rate", "values": [0.001, 0.1]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p := exec.CommandContext(ctx, os.Args[0], "tune", "--tuner", "vote", "--dataset", "mnist", "--data-dir", dir, "--nominal-size", "480",
		"--space", space, "--clients", "3", "--votes-per-client", "1", "--epsilon", "8", "--vote-epsilon", "2",
		"--final-training", "dp-fedavg", "--fedavg-rounds", "2", "--batch-size", "64", "--out", out)
	p.Env = append(os.Environ(), "DPTUNE_TEST_MAIN=1")
	if b, err := p.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	b, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep job.VoteReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.FinalTraining != federated.FinalDPFedAvg || rep.EpsilonLevel != "client" || !rep.ModelPrivate || rep.Survivors != 3 {
		t.Fatalf("report %s", b)
	}
	if rep.Epsilon == nil || *rep.Epsilon > 8*(1+1e-6) || *rep.Epsilon < 7 {
		t.Fatalf("client-level ε %v, want just under 8", rep.Epsilon)
	}
	if n := len(rep.Ledger.Entries); n != 3 {
		t.Fatalf("%d ledger entries, want the vote and two rounds", n)
	}
	for _, e := range rep.Ledger.Entries[1:] {
		ev, ok := e.Event.(accounting.DistributedDiscreteGaussian)
		if !ok || ev.Summands != 3 || ev.Adjacency != "replace-one-client" || ev.Dimension != 26010 {
			t.Errorf("round entry %q: %#v", e.Label, e.Event)
		}
	}
	for i := 1; i <= 3; i++ {
		log, err := os.ReadFile(filepath.Join(out, "clients", fmt.Sprintf("client-%d.log", i)))
		if err != nil || !strings.Contains(string(log), fmt.Sprintf("client %d ", i-1)) {
			t.Errorf("client-%d.log (%v): %s; want client ID %d", i, err, log, i-1)
		}
	}
}

// L1: a missing --data-dir (and a bad round deadline) is refused with exit
// status 2 before the listener opens or any client starts: no client logs
// are written and it takes no time. Before, the clients were started first
// and the server failed with status 1 after them.
func TestTuneVoteChecksBeforeClients(t *testing.T) {
	for _, bad := range [][]string{
		{"--dataset", "cifar10", "--data-dir", filepath.Join(t.TempDir(), "nonexist")},
		{"--round-timeout", "0s"},
		{"--message-timeout", "-1s"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		args := append([]string{"tune", "--tuner", "vote", "--clients", "2", "--out", out}, bad...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		p := exec.CommandContext(ctx, os.Args[0], args...)
		p.Env = append(os.Environ(), "DPTUNE_TEST_MAIN=1")
		b, err := p.CombinedOutput()
		cancel()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || strings.Count(strings.TrimSpace(string(b)), "\n") != 0 {
			t.Errorf("%v: %v, output %q; want exit status 2 and one line", bad, err, b)
		}
		if _, err := os.Stat(filepath.Join(out, "clients")); err == nil {
			t.Errorf("%v: clients were started", bad)
		}
	}
}
