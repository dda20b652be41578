package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dptune/dptune/privacy/accounting"
)

// counting wraps a Protocol, counting its trials and cancelling cancel
// once after the after-th trial has started.
type counting struct {
	p      Protocol
	calls  atomic.Int64
	after  int64
	cancel context.CancelFunc
}

func (c *counting) Trial(ctx context.Context, b int, rng *rand.Rand) (float64, error) {
	n := c.calls.Add(1)
	if c.cancel != nil && n == c.after {
		c.cancel()
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return c.p.Trial(ctx, b, rng)
}

// game is a cheap protocol with ±Inf statistics in it: K ∼ Poisson(1)
// releases nothing (−Inf) about a third of the time.
var game = ReducedTuning{Mu: 1, Repetitions: accounting.PoissonRepetitions(1)}

func equalStats(t *testing.T, what string, a0, a1, b0, b1 []float64) {
	t.Helper()
	if !slices.Equal(a0, b0) || !slices.Equal(a1, b1) {
		t.Errorf("%s: statistics differ (%d+%d vs %d+%d)", what, len(a0), len(a1), len(b0), len(b1))
	}
}

func TestRunReproducible(t *testing.T) {
	ctx := context.Background()
	a0, a1, err := Run(ctx, game, Config{Trials: 2000, Seed: 5, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b0, b1, err := Run(ctx, game, Config{Trials: 2000, Seed: 5, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	equalStats(t, "1 vs 4 workers", a0, a1, b0, b1)
	if len(a0)+len(a1) != 2000 || len(a0) < 900 || len(a1) < 900 {
		t.Errorf("%d trials with b = 0 and %d with b = 1 out of 2000", len(a0), len(a1))
	}
	if !slices.ContainsFunc(a0, func(x float64) bool { return math.IsInf(x, -1) }) {
		t.Error("no −Inf statistic (nothing released) in 1000 Poisson(1) trials")
	}
	c0, c1, err := Run(ctx, game, Config{Trials: 2000, Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a0, c0) && slices.Equal(a1, c1) {
		t.Error("seeds 5 and 6 gave the same statistics")
	}
	// A longer run extends a shorter one: trial i depends only on (seed, i).
	d0, d1, err := Run(ctx, game, Config{Trials: 1000, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d0, a0[:len(d0)]) || !slices.Equal(d1, a1[:len(d1)]) {
		t.Error("the first 1000 trials of a 2000-trial run differ from a 1000-trial run")
	}
}

// TestRunResume interrupts an audit by cancelling its context, resumes it
// with the same settings, and compares with an uninterrupted run; the
// resumed run must play only the missing trials and report progress from
// the resumed count.
func TestRunResume(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.csv")
	want0, want1, err := Run(context.Background(), game, Config{Trials: 1000, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	proto := []Param{{"kind", "test game"}, {"mu", "1"}}

	// Interrupted after about 400 trials of 1000.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := &counting{p: game, after: 400, cancel: cancel}
	_, _, err = Run(ctx, p, Config{Trials: 1000, Seed: 9, Workers: 2, CSV: path, Protocol: proto})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: error %v, want context.Canceled", err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head := "# dptune audit v2\n# kind=test game\n# mu=1\n# seed=9\n# trials=1000\n"
	sum := sha256.Sum256([]byte(head))
	head += "# digest=sha256:" + hex.EncodeToString(sum[:]) + "\ntrial,b,stat\n"
	if !strings.HasPrefix(string(data), head) {
		t.Fatalf("header %q, want %q", data[:min(len(data), len(head))], head)
	}
	saved := strings.Count(string(data), "\n") - 7
	if saved < 390 || saved >= 1000 {
		t.Fatalf("%d trials saved after cancelling at the 400th", saved)
	}

	// CheckCSV agrees with the same audit and refuses others before playing.
	if err := CheckCSV(Config{Trials: 1000, Seed: 9, CSV: path, Protocol: proto}); err != nil {
		t.Errorf("CheckCSV of the same audit: %v", err)
	}
	for _, c := range []Config{{Trials: 3000, Seed: 9}, {Trials: 1000, Seed: 8}, {Trials: 1000, Seed: 9, Protocol: proto[:1]}} {
		c.CSV = path
		if err := CheckCSV(c); !errors.Is(err, ErrOtherAudit) {
			t.Errorf("CheckCSV of %+v: error %v, want ErrOtherAudit", c, err)
		}
	}

	// Resume with the same settings.
	p = &counting{p: game}
	var first, last, total int
	first = -1
	got0, got1, err := Run(context.Background(), p, Config{Trials: 1000, Seed: 9, CSV: path, Protocol: proto, Progress: func(done, tot int) {
		if first < 0 {
			first = done
		}
		last, total = done, tot
	}})
	if err != nil {
		t.Fatal(err)
	}
	equalStats(t, "resumed vs uninterrupted", got0, got1, want0, want1)
	if int(p.calls.Load()) != 1000-saved {
		t.Errorf("resumed run played %d trials, want %d", p.calls.Load(), 1000-saved)
	}
	if first != saved || last != 1000 || total != 1000 {
		t.Errorf("progress went from %d to %d of %d, want %d to 1000 of 1000", first, last, total, saved)
	}
	data, err = os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(data), head) || strings.Count(string(data), "\n") != 1007 {
		t.Errorf("CSV after resuming: %d lines", strings.Count(string(data), "\n"))
	}

	// Everything is in the file now: a rerun plays nothing.
	p = &counting{p: game}
	got0, got1, err = Run(context.Background(), p, Config{Trials: 1000, Seed: 9, CSV: path, Protocol: proto})
	if err != nil {
		t.Fatal(err)
	}
	equalStats(t, "rerun of a finished audit", got0, got1, want0, want1)
	if p.calls.Load() != 0 {
		t.Errorf("rerun of a finished audit played %d trials", p.calls.Load())
	}
}

// TestRunPartialLine cuts the CSV's last line short, as a crash during a
// write would, and checks that the resumed run drops it, replays that
// trial and leaves a well-formed file.
func TestRunPartialLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.csv")
	cfg := Config{Trials: 200, Seed: 3, CSV: path}
	want0, want1, err := Run(context.Background(), game, cfg)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Drop the last line's stat's tail and its newline: "i,b,1.23" → "i,b,1".
	cut := len(data) - 1
	for data[cut-1] != ',' {
		cut--
	}
	cut++
	if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
		t.Fatal(err)
	}
	p := &counting{p: game}
	got0, got1, err := Run(context.Background(), p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	equalStats(t, "after a partial line", got0, got1, want0, want1)
	if p.calls.Load() != 1 {
		t.Errorf("replayed %d trials, want the 1 whose line was cut", p.calls.Load())
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(after), "\n")
	if len(lines) != 206 || lines[205] != "" {
		t.Fatalf("CSV has %d lines after the resume, want 205 and a final newline", len(lines)-1)
	}
	for _, l := range lines[5:205] {
		if _, err := parseRecord(l, 200); err != nil {
			t.Errorf("line %q: %v", l, err)
		}
	}
}

// TestRunRefusesCSV: another seed, fewer or more trials, another protocol
// field, a foreign file, a file of the earlier format, an edited header, a
// malformed line and a coin that disagrees with the seed are refused with
// an error naming the file (and the differing field), which is left as it
// was.
func TestRunRefusesCSV(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.csv")
	proto := []Param{{"kind", "reduced"}, {"mu", "3"}}
	if _, _, err := Run(context.Background(), game, Config{Trials: 50, Seed: 1, CSV: path, Protocol: proto}); err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(path)
	for _, tc := range []struct {
		name, field string
		cfg         Config
	}{
		{"other seed", "seed=1, not 2", Config{Trials: 50, Seed: 2, Protocol: proto}},
		{"fewer trials", "trials=50, not 49", Config{Trials: 49, Seed: 1, Protocol: proto}},
		{"more trials", "trials=50, not 51", Config{Trials: 51, Seed: 1, Protocol: proto}},
		{"other mu", "mu=3, not 0.2", Config{Trials: 50, Seed: 1, Protocol: []Param{{"kind", "reduced"}, {"mu", "0.2"}}}},
		{"other kind", "kind=reduced, not dpsgd", Config{Trials: 50, Seed: 1, Protocol: []Param{{"kind", "dpsgd"}, {"mu", "3"}}}},
		{"missing field", "mu=3, which this one does not have", Config{Trials: 50, Seed: 1, Protocol: proto[:1]}},
	} {
		tc.cfg.CSV = path
		_, _, err := Run(context.Background(), game, tc.cfg)
		if !errors.Is(err, ErrOtherAudit) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: error %v, want ErrOtherAudit naming %s and %q", tc.name, err, path, tc.field)
		}
	}
	if now, _ := os.ReadFile(path); string(now) != string(orig) {
		t.Error("a refused run changed the CSV")
	}

	lines := strings.SplitAfter(string(orig), "\n")
	head := strings.Join(lines[:7], "")
	flipped := strings.Split(strings.TrimSuffix(lines[7], "\n"), ",")
	flipped[1] = map[string]string{"0": "1", "1": "0"}[flipped[1]]
	for name, content := range map[string]string{
		"foreign":    "name,score\nalice,3\n",
		"old format": "# dptune audit seed=1 trials=50\ntrial,b,stat\n" + lines[7],
		"edited":     strings.Replace(head, "# mu=3", "# mu=4", 1) + lines[7],
		"malformed":  head + "7,0\n",
		"duplicate":  head + lines[7] + lines[7],
		"wrong coin": head + strings.Join(flipped, ",") + "\n",
		"trial 50":   head + "50,0,1.5\n",
		"no columns": strings.Join(lines[:6], "") + "0,1,2\n",
		"bad field":  lines[0] + "# mu\n" + lines[7],
		"no digest":  strings.Join(lines[:5], "") + lines[6] + lines[7],
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".csv")
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := Run(context.Background(), game, Config{Trials: 50, Seed: 1, CSV: p, Protocol: proto})
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s CSV: error %v, want one naming %s", name, err, p)
		}
		if (name == "old format" || name == "edited") != errors.Is(err, ErrOtherAudit) {
			t.Errorf("%s CSV: error %v: ErrOtherAudit wrapped = %v", name, err, errors.Is(err, ErrOtherAudit))
		}
		if now, _ := os.ReadFile(p); string(now) != content {
			t.Errorf("%s CSV: a refused run changed it", name)
		}
	}
}

// A header cut short by a crash before any trial finished is rewritten.
func TestRunCutHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.csv")
	cfg := Config{Trials: 20, Seed: 4, CSV: path, Protocol: []Param{{"kind", "test"}}}
	head := header(cfg.fields())
	for _, cut := range []int{0, 5, 20, len(head) - 3} {
		if err := os.WriteFile(path, []byte(head[:cut]), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := CheckCSV(cfg); err != nil {
			t.Errorf("cut at %d: CheckCSV: %v", cut, err)
		}
		if _, _, err := Run(context.Background(), game, cfg); err != nil {
			t.Errorf("cut at %d: %v", cut, err)
		}
		if data, _ := os.ReadFile(path); !strings.HasPrefix(string(data), head) || strings.Count(string(data), "\n") != 26 {
			t.Errorf("cut at %d: file %q", cut, data)
		}
	}
}

// failing fails about 1% of its trials, or returns NaN on them.
type failing struct{ nan bool }

func (f failing) Trial(ctx context.Context, b int, rng *rand.Rand) (float64, error) {
	if rng.Float64() < 0.01 {
		if f.nan {
			return math.NaN(), nil
		}
		return 0, errors.New("protocol broke")
	}
	return float64(b), nil
}

func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	if _, _, err := Run(ctx, failing{}, Config{Trials: 1000, Seed: 1}); err == nil || !strings.Contains(err.Error(), "protocol broke") || !strings.Contains(err.Error(), "trial") {
		t.Errorf("failing trial: error %v", err)
	}
	if _, _, err := Run(ctx, failing{nan: true}, Config{Trials: 1000, Seed: 1}); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("NaN statistic: error %v", err)
	}
	for _, c := range []Config{{Trials: 0}, {Trials: MaxTrials + 1}, {Trials: math.MaxInt}, {Trials: 10, Workers: -1},
		{Trials: 10, Protocol: []Param{{"a=b", "1"}}}, {Trials: 10, Protocol: []Param{{"seed", "1"}}}, {Trials: 10, Protocol: []Param{{"a", "1\n"}}}} {
		if _, _, err := Run(ctx, game, c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if _, _, err := Run(ctx, nil, Config{Trials: 10}); err == nil {
		t.Error("nil protocol: no error")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := Run(cancelled, game, Config{Trials: 10}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: error %v", err)
	}
}
