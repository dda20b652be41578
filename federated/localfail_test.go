package federated

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dptune/dptune/data"
	pb "github.com/dptune/dptune/federated/votepb"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// sessionWith runs a server and one client per load function over an
// in-memory gRPC connection; client i joins as part i+1 with seed 100+i.
func sessionWith(t *testing.T, job Job, loads []func(Job) (*data.Dataset, error)) (Outcome, error, []error) {
	t.Helper()
	srv, err := NewServer(job)
	if err != nil {
		t.Fatal(err)
	}
	var events []Event
	srv.Progress = func(e Event) { events = append(events, e) }
	dial := serveInMemory(t, srv)
	var wg sync.WaitGroup
	errs := make([]error, len(loads))
	for i, load := range loads {
		conn := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			seed := uint64(100 + i)
			c := &Client{Load: load, Seed: &seed, Part: i + 1, Parts: len(loads)}
			_, errs[i] = c.Run(context.Background(), pb.NewVoteClient(conn))
		}()
	}
	out, err := srv.Wait(context.Background())
	wg.Wait()
	for _, e := range events {
		if e.Stage == "dropped" {
			t.Errorf("client %d dropped", e.Client)
		}
	}
	return out, err, errs
}

// poisoned returns load functions for n clients of the toy data: client 0
// holds its share scaled by 1e30 (its local SGD diverges), client 1 a split
// of only n examples (one each: too few to hold one out), client 2 labels
// beyond the classes; the others, and all but client 0 unless all, are
// clean.
func poisoned(n int, clean *data.Dataset, all bool) []func(Job) (*data.Dataset, error) {
	loads := make([]func(Job) (*data.Dataset, error), n)
	for i := range loads {
		loads[i] = func(Job) (*data.Dataset, error) { return clean, nil }
	}
	big := *clean
	big.X = slices.Clone(clean.X)
	for i := range big.X {
		big.X[i] *= 1e30
	}
	loads[0] = func(Job) (*data.Dataset, error) { return &big, nil }
	if !all {
		return loads
	}
	tiny := &data.Dataset{Name: "tiny", N: n, C: 1, H: 4, W: 4, Classes: 2, X: clean.X[:n*16], Y: clean.Y[:n]}
	loads[1] = func(Job) (*data.Dataset, error) { return tiny, nil }
	bad := *clean
	bad.Y = slices.Clone(clean.Y)
	for i := range bad.Y {
		bad.Y[i] = 7
	}
	loads[2] = func(Job) (*data.Dataset, error) { return &bad, nil }
	return loads
}

// TestLocalFailuresAreNotDropouts: clients whose local training diverges,
// whose share is too small to hold an example out, or whose labels break
// the training, stay in every round with a valid contribution: the
// survivor counts the ledger and the report are built from are those of
// the clean run, and the model is finite. Before, each of them left the
// protocol, which with f = 1/4 of 4 clients aborted the run (and with one
// of them, released 3 survivors instead of 4: [3 3] for DP-FedAvg's rounds
// when the scaled client's local SGD diverged).
func TestLocalFailuresAreNotDropouts(t *testing.T) {
	for _, c := range []struct {
		mode string
		all  bool
	}{{FinalDPFedAvg, false}, {FinalDPFedAvg, true}, {FinalDPSGD, true}} {
		mode := c.mode
		job := toyJob(t, 4, 0.25)
		job.Threshold = 3
		if mode == FinalDPFedAvg {
			job.Final.Mode, job.Final.ClipNorm, job.Final.NoiseMultiplier = FinalDPFedAvg, 0.5, 0.05
			job.Final.Scale = DefaultUpdateScale(34, job.Final.ClipNorm)
		}
		d := toyData(job.NominalN)
		loads := make([]func(Job) (*data.Dataset, error), 4)
		for i := range loads {
			loads[i] = func(Job) (*data.Dataset, error) { return d, nil }
		}
		want, err, _ := sessionWith(t, job, loads)
		if err != nil {
			t.Fatalf("%s, clean: %v", mode, err)
		}
		got, err, errs := sessionWith(t, job, poisoned(4, d, c.all))
		if err != nil {
			t.Fatalf("%s, poisoned: %v (clients: %v)", mode, err, errs)
		}
		for i, e := range errs {
			if e != nil {
				t.Errorf("%s: client %d: %v", mode, i, e)
			}
		}
		if !slices.Equal(got.Survivors, want.Survivors) || got.Answered != want.Answered ||
			!slices.Equal(got.RoundSurvivors, want.RoundSurvivors) || len(got.Params) != len(want.Params) {
			t.Errorf("%s: poisoned survivors %v, answered %d, per round %v, %d parameters; clean %v, %d, %v, %d", mode,
				got.Survivors, got.Answered, got.RoundSurvivors, len(got.Params), want.Survivors, want.Answered, want.RoundSurvivors, len(want.Params))
		}
		if !slices.Equal(want.Survivors, []int{0, 1, 2, 3}) {
			t.Errorf("%s: clean survivors %v", mode, want.Survivors)
		}
		if !finite(got.Params) {
			t.Errorf("%s: a non-finite parameter in the poisoned run's model", mode)
		}
	}
}

// A client without data, with FinalDPSGD, runs its round's DP-SGD steps on
// empty batches: its update is −η/(qN)·Σ_steps N(0, (σC)²) per parameter
// (no momentum, no decay), so its variance is steps·(ησC/(qN))² — not the
// exact zero that would tell it apart from a client with one example.
func TestEmptyShareRunsNoiseOnlySteps(t *testing.T) {
	job := toyJob(t, 4, 0)
	job.Final.NoiseMultiplier, job.Final.ClipNorm = 2, 0.5
	cand := job.Space.At(1).Values
	cfg := job.finalConfig(cand, 0, nil)
	scale := cand["learning_rate"] * job.Final.NoiseMultiplier * job.Final.ClipNorm / cfg.ExpectedBatchSize
	want := float64(job.Final.StepsPerRound) * scale * scale
	var s2 float64
	n := 0
	for seed := range uint64(60) {
		net, err := model.New(job.Arch, randsrc.New(&job.InitSeed, "init"))
		if err != nil {
			t.Fatal(err)
		}
		global := slices.Clone(net.Params)
		if failed, err := job.localRound(context.Background(), net, &data.Dataset{}, cand, 0, &seed); err != nil || failed {
			t.Fatal(err)
		}
		for i, p := range net.Params {
			d := float64(p - global[i])
			s2 += d * d
			n++
		}
	}
	if v := s2 / float64(n); math.Abs(v-want) > 0.15*want {
		t.Errorf("update variance %.4g, want steps·(ησC/(qN))² = %.4g", v, want)
	}
}

// Local training that outlasts the job's LocalTimeout is a local failure:
// every client abstains and sends zero updates, none drops, and with plain
// FedAvg the model stays the initial one exactly.
func TestLocalTimeoutAbstains(t *testing.T) {
	job := toyJob(t, 4, 0)
	job.Final.Mode = FinalNonPrivate
	job.LocalTimeout = time.Nanosecond
	d := toyData(job.NominalN)
	loads := make([]func(Job) (*data.Dataset, error), 4)
	for i := range loads {
		loads[i] = func(Job) (*data.Dataset, error) { return d, nil }
	}
	out, err, errs := sessionWith(t, job, loads)
	if err != nil {
		t.Fatalf("%v (clients: %v)", err, errs)
	}
	init, err := model.New(job.Arch, randsrc.New(&job.InitSeed, "init"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Survivors, []int{0, 1, 2, 3}) || !slices.Equal(out.Params, init.Params) {
		t.Errorf("survivors %v; model moved from the initial one: %v", out.Survivors, !slices.Equal(out.Params, init.Params))
	}
}

// A panic on the client's data (here: a training set with fewer labels
// than examples, which the split indexes past) is recovered: the client
// stays, abstains and sends zero updates, and the run matches the clean
// one's survivors.
func TestLocalPanicIsRecovered(t *testing.T) {
	if err := safely(func() error { panic("boom") }); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("safely: %v", err)
	}
	job := toyJob(t, 4, 0)
	d := toyData(job.NominalN)
	broken := *d
	broken.Y = d.Y[:10]
	loads := make([]func(Job) (*data.Dataset, error), 4)
	for i := range loads {
		loads[i] = func(Job) (*data.Dataset, error) { return d, nil }
	}
	loads[3] = func(Job) (*data.Dataset, error) { return &broken, nil }
	out, err, errs := sessionWith(t, job, loads)
	if err != nil || !slices.Equal(out.Survivors, []int{0, 1, 2, 3}) || !finite(out.Params) {
		t.Errorf("survivors %v, error %v (clients: %v)", out.Survivors, err, errs)
	}
}
