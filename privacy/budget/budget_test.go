package budget

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dptune/dptune/privacy/accounting"
)

// theOrders is the order list the issue specifies, written out
// independently of DefaultOrders.
var theOrders = []float64{1.25, 1.5, 1.75, 2, 2.5, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64, 128, 256}

func newBudget(t *testing.T, eps, delta float64) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mnist.budget")
	if err := Init(path, eps, delta, "mnist"); err != nil {
		t.Fatal(err)
	}
	return path
}

func ledgerOf(label string, e accounting.Event) accounting.Ledger {
	var l accounting.Ledger
	l.Add(label, e)
	return l
}

func gaussian(z float64) accounting.Ledger {
	return ledgerOf("gaussian", accounting.Gaussian{NoiseMultiplier: z, Sensitivity: 1})
}

func load(t *testing.T, path string) *Budget {
	t.Helper()
	b, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func near(a, b, rel float64) bool {
	return a == b || math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b))
}

// reseal decodes the file at path, lets edit change it, and writes it back
// with a valid checksum: a file damaged by someone who knew the format.
func reseal(t *testing.T, path string, edit func(*fileJSON)) {
	t.Helper()
	var f fileJSON
	if err := json.Unmarshal(read(t, path), &f); err != nil {
		t.Fatal(err)
	}
	edit(&f)
	data, err := encode(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// assertFileError checks that err names the file and, if id is not empty,
// the release.
func assertFileError(t *testing.T, what string, err error, path, id string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: no error", what)
	}
	msg := err.Error()
	if !strings.Contains(msg, path) {
		t.Errorf("%s: error %q does not name the file %s", what, msg, path)
	}
	if id != "" && !strings.Contains(msg, id) {
		t.Errorf("%s: error %q does not name the release %s", what, msg, id)
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("%s: error %q is not one line", what, msg)
	}
}

func TestInit(t *testing.T) {
	path := newBudget(t, 1.5, 1e-5)
	b := load(t, path)
	if b.Dataset != "mnist" || b.Epsilon != 1.5 || b.Delta != 1e-5 || len(b.Releases) != 0 {
		t.Errorf("loaded %+v", b)
	}
	if len(b.Orders) != len(theOrders) {
		t.Fatalf("orders %v, want %v", b.Orders, theOrders)
	}
	for j := range theOrders {
		if b.Orders[j] != theOrders[j] {
			t.Fatalf("orders %v, want %v", b.Orders, theOrders)
		}
	}
	if b.Spent() != 0 || b.Remaining() != 1.5 {
		t.Errorf("empty budget: spent %v, remaining %v", b.Spent(), b.Remaining())
	}
	var m map[string]any
	if err := json.Unmarshal(read(t, path), &m); err != nil {
		t.Fatal(err)
	}
	if m["version"] != 1.0 || m["dataset"] != "mnist" {
		t.Errorf("file %v", m)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
}

func TestInitNeverOverwrites(t *testing.T) {
	path := newBudget(t, 1.5, 1e-5)
	if _, err := Reserve(path, "mnist", "train", "", gaussian(5)); err != nil {
		t.Fatal(err)
	}
	before := read(t, path)
	err := Init(path, 3, 1e-6, "mnist")
	assertFileError(t, "Init on an existing file", err, path, "")
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("error %v does not wrap fs.ErrExist", err)
	}
	if !bytes.Equal(before, read(t, path)) {
		t.Error("Init changed an existing file")
	}
	assertOnlyFiles(t, path)
}

func TestInitRejectsBadCaps(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		eps, delta float64
		dataset    string
	}{
		{0, 1e-5, "mnist"}, {-1, 1e-5, "mnist"}, {math.Inf(1), 1e-5, "mnist"}, {math.NaN(), 1e-5, "mnist"},
		{1, 0, "mnist"}, {1, 1, "mnist"}, {1, math.NaN(), "mnist"}, {1, 1e-5, ""},
	} {
		path := filepath.Join(dir, "b")
		err := Init(path, c.eps, c.delta, c.dataset)
		assertFileError(t, "Init with a bad cap", err, path, "")
		if _, err := os.Stat(path); err == nil {
			t.Fatalf("Init(%v, %v, %q) created the file", c.eps, c.delta, c.dataset)
		}
	}
}

// The filter total of one Gaussian release is the closed form
// min over the orders of α/(2z²) + log((α−1)/α) − (log(δ/m) + log α)/(α−1)
// (Mironov 2017, Proposition 7, for the Gaussian's RDP with Δ = 1).
func TestFilterOfOneGaussianIsClosedForm(t *testing.T) {
	for _, z := range []float64{0.7, 2, 5, 30} {
		const delta = 1e-5
		path := newBudget(t, 1e6, delta)
		if _, err := Reserve(path, "mnist", "train", "one Gaussian", gaussian(z)); err != nil {
			t.Fatal(err)
		}
		b := load(t, path)
		m := float64(len(theOrders))
		filter, alone := math.Inf(1), math.Inf(1)
		for j, a := range theOrders {
			rdp := a / (2 * z * z)
			if !near(b.Releases[0].RDP[j], rdp, 1e-12) {
				t.Errorf("z = %v: RDP at %v is %v, want %v", z, a, b.Releases[0].RDP[j], rdp)
			}
			filter = math.Min(filter, rdp+math.Log((a-1)/a)-(math.Log(delta/m)+math.Log(a))/(a-1))
			alone = math.Min(alone, rdp+math.Log((a-1)/a)-(math.Log(delta)+math.Log(a))/(a-1))
		}
		filter, alone = math.Max(filter, 0), math.Max(alone, 0)
		if got := b.Spent(); !near(got, filter, 1e-12) {
			t.Errorf("z = %v: filter total %v, want %v", z, got, filter)
		}
		if got := b.Releases[0].Epsilon; !near(got, alone, 1e-12) {
			t.Errorf("z = %v: release ε %v, want %v", z, got, alone)
		}
		// The union over 20 orders costs log(20)/(α−1) at the best order:
		// more than the release alone, by at most log 20/(1.25−1).
		if !(filter >= alone && filter <= alone+math.Log(m)/0.25) {
			t.Errorf("z = %v: filter %v vs alone %v", z, filter, alone)
		}
	}
}

func TestFilterEpsilonOfNothingIsZero(t *testing.T) {
	if eps, order := FilterEpsilon(theOrders, make([]float64, len(theOrders)), 1e-5); eps != 0 || order != 0 {
		t.Errorf("FilterEpsilon of nothing = %v at %v", eps, order)
	}
	inf := make([]float64, len(theOrders))
	for j := range inf {
		inf[j] = math.Inf(1)
	}
	if eps, _ := FilterEpsilon(theOrders, inf, 1e-5); !math.IsInf(eps, 1) {
		t.Errorf("FilterEpsilon of +Inf = %v", eps)
	}
}

// The checksum is the SHA-256 of the compact JSON of the file without its
// checksum field, as the package documentation says.
func TestChecksumIsSHA256OfCompactJSON(t *testing.T) {
	path := newBudget(t, 1.5, 1e-5)
	if _, err := Reserve(path, "mnist", "train", "a <label> & more", ledgerOf("dpsgd", accounting.DPSGD(1.1, 0.01, 100))); err != nil {
		t.Fatal(err)
	}
	data := read(t, path)
	re := regexp.MustCompile(`,\s*"checksum":\s*"([0-9a-f]+)"`)
	m := re.FindSubmatch(data)
	if m == nil {
		t.Fatalf("no checksum in %s", data)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, re.ReplaceAll(data, nil)); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(compact.Bytes())
	if hex.EncodeToString(sum[:]) != string(m[1]) {
		t.Errorf("checksum %s, want %x", m[1], sum)
	}
}

func TestReserveCommitRoundTrip(t *testing.T) {
	path := newBudget(t, 8, 1e-5)
	worst := ledgerOf("training", accounting.DPSGD(1.1, 0.01, 1000))
	actual := ledgerOf("training (interrupted)", accounting.DPSGD(1.1, 0.01, 400))
	res, err := Reserve(path, "mnist", "train", "lr=0.5", worst)
	if err != nil {
		t.Fatal(err)
	}
	if res.Path() != path || len(res.ID()) != 32 {
		t.Errorf("reservation %q in %q", res.ID(), res.Path())
	}
	rdpOf := func(l accounting.Ledger) []float64 {
		r, err := accounting.RDP{Orders: theOrders}.RDP(l.Event())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	b := load(t, path)
	rel := b.Releases[0]
	if rel.ID != res.ID() || rel.Status != Reserved || rel.Command != "train" || rel.Label != "lr=0.5" {
		t.Errorf("reserved release %+v", rel)
	}
	if time.Since(rel.Time) > time.Minute || time.Since(rel.Time) < -time.Minute {
		t.Errorf("release time %v", rel.Time)
	}
	wantWorst, _ := FilterEpsilon(theOrders, rdpOf(worst), 1e-5)
	if !near(b.Spent(), wantWorst, 1e-12) {
		t.Errorf("spent %v after reserving, want the worst case's %v", b.Spent(), wantWorst)
	}
	if err := res.Commit(actual); err != nil {
		t.Fatal(err)
	}
	b = load(t, path)
	rel = b.Releases[0]
	if rel.Status != Done || len(rel.Ledger.Entries) != 1 || rel.Ledger.Entries[0].Label != "training (interrupted)" {
		t.Errorf("committed release %+v", rel)
	}
	want := rdpOf(actual)
	for j := range want {
		if !near(rel.RDP[j], want[j], 1e-12) {
			t.Errorf("committed RDP at %v: %v, want %v", theOrders[j], rel.RDP[j], want[j])
		}
	}
	wantActual, _ := FilterEpsilon(theOrders, want, 1e-5)
	if !near(b.Spent(), wantActual, 1e-12) || !(b.Spent() < wantWorst) {
		t.Errorf("spent %v after committing, want %v (< %v)", b.Spent(), wantActual, wantWorst)
	}
	if !near(b.Remaining(), 8-wantActual, 1e-12) {
		t.Errorf("remaining %v, want %v", b.Remaining(), 8-wantActual)
	}
	assertFileError(t, "second Commit", res.Commit(actual), path, res.ID())
	assertOnlyFiles(t, path)
}

// assertOnlyFiles checks that the budget's directory holds the file and at
// most its lock file: no temporary file was left behind.
func assertOnlyFiles(t *testing.T, path string) {
	t.Helper()
	ents, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if n := e.Name(); n != filepath.Base(path) && n != filepath.Base(path)+".lock" {
			t.Errorf("stray file %s", n)
		}
	}
}

func TestReserveBeyondCapIsRefusedAndLeavesFileIntact(t *testing.T) {
	path := newBudget(t, 1.5, 1e-5)
	if _, err := Reserve(path, "mnist", "train", "first", gaussian(5)); err != nil {
		t.Fatal(err)
	}
	before := read(t, path)
	spent := load(t, path).Spent()
	_, err := Reserve(path, "mnist", "train", "second", gaussian(1))
	assertFileError(t, "Reserve beyond the cap", err, path, "")
	if !errors.Is(err, ErrExceeded) {
		t.Errorf("error %v does not wrap ErrExceeded", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "remains") || !strings.Contains(msg, "1.5") {
		t.Errorf("message %q does not say what remains of the cap", msg)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("only %.3g of 1.5 remains", 1.5-spent)) {
		t.Errorf("message %q does not name the remaining %.3g", err, 1.5-spent)
	}
	if !bytes.Equal(before, read(t, path)) {
		t.Error("a refused reservation changed the file")
	}
	assertOnlyFiles(t, path)
}

// Several goroutines reserving identical releases at once: exactly as many
// are recorded as fit when reserved one after another, the rest are
// refused with ErrExceeded, and the file is valid after.
func TestConcurrentReservesAreAllCounted(t *testing.T) {
	const n, cap, delta = 8, 2.0, 1e-5
	ledger := gaussian(6)
	seq := newBudget(t, cap, delta)
	fit := 0
	for i := 0; i < n; i++ {
		if _, err := Reserve(seq, "mnist", "tune", "", ledger); err == nil {
			fit++
		} else if !errors.Is(err, ErrExceeded) {
			t.Fatal(err)
		}
	}
	if fit < 2 || fit >= n {
		t.Fatalf("%d of %d fit one after another; the test wants some but not all", fit, n)
	}
	path := newBudget(t, cap, delta)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := Reserve(path, "mnist", "tune", "", ledger)
			if err == nil {
				err = res.Commit(ledger)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrExceeded):
			t.Errorf("concurrent reservation: %v", err)
		}
	}
	b := load(t, path)
	if ok != fit || len(b.Releases) != fit {
		t.Errorf("%d reservations succeeded and %d are in the file; %d fit one after another", ok, len(b.Releases), fit)
	}
	for _, r := range b.Releases {
		if r.Status != Done {
			t.Errorf("release %s: status %s", r.ID, r.Status)
		}
	}
	if !(b.Spent() <= cap) {
		t.Errorf("spent %v > cap %v", b.Spent(), cap)
	}
	assertOnlyFiles(t, path)
}

func TestDamagedFilesAreRefused(t *testing.T) {
	setup := func(t *testing.T) (string, string) {
		path := newBudget(t, 1.5, 1e-5)
		res, err := Reserve(path, "mnist", "train", "run", ledgerOf("dpsgd", accounting.DPSGD(1.1, 0.01, 100)))
		if err != nil {
			t.Fatal(err)
		}
		return path, res.ID()
	}
	cases := []struct {
		name    string
		damage  func(t *testing.T, path string)
		release bool // the error must name the release
	}{
		{"truncated", func(t *testing.T, path string) {
			data := read(t, path)
			os.WriteFile(path, data[:len(data)/2], 0o600)
		}, false},
		{"empty", func(t *testing.T, path string) { os.WriteFile(path, nil, 0o600) }, false},
		{"flipped checksum", func(t *testing.T, path string) {
			data := read(t, path)
			i := bytes.Index(data, []byte(`"checksum": "`)) + len(`"checksum": "`)
			if data[i] == '0' {
				data[i] = '1'
			} else {
				data[i] = '0'
			}
			os.WriteFile(path, data, 0o600)
		}, false},
		{"edited cap", func(t *testing.T, path string) {
			data := bytes.Replace(read(t, path), []byte(`"epsilon": 1.5`), []byte(`"epsilon": 15`), 1)
			os.WriteFile(path, data, 0o600)
		}, false},
		{"modified rdp, resealed", func(t *testing.T, path string) {
			reseal(t, path, func(f *fileJSON) { f.Releases[0].RDP[5] *= 0.5 })
		}, true},
		{"negative rdp, resealed", func(t *testing.T, path string) {
			reseal(t, path, func(f *fileJSON) { f.Releases[0].RDP[5] = -1 })
		}, true},
		{"short rdp, resealed", func(t *testing.T, path string) {
			reseal(t, path, func(f *fileJSON) { f.Releases[0].RDP = f.Releases[0].RDP[1:] })
		}, true},
		{"modified release ε, resealed", func(t *testing.T, path string) {
			reseal(t, path, func(f *fileJSON) { f.Releases[0].Epsilon = 0 })
		}, true},
		{"modified ledger, resealed", func(t *testing.T, path string) {
			reseal(t, path, func(f *fileJSON) {
				var c bytes.Buffer
				json.Compact(&c, f.Releases[0].Ledger)
				if !bytes.Contains(c.Bytes(), []byte(`"count":100`)) {
					t.Fatalf("no count in %s", c.Bytes())
				}
				f.Releases[0].Ledger = bytes.Replace(c.Bytes(), []byte(`"count":100`), []byte(`"count":10`), 1)
			})
		}, true},
		{"bad status, resealed", func(t *testing.T, path string) {
			reseal(t, path, func(f *fileJSON) { f.Releases[0].Status = "free" })
		}, true},
		{"order 1, resealed", func(t *testing.T, path string) {
			reseal(t, path, func(f *fileJSON) { f.Orders[0] = 1 })
		}, false},
		{"version 99", func(t *testing.T, path string) {
			data := bytes.Replace(read(t, path), []byte(`"version": 1`), []byte(`"version": 99`), 1)
			os.WriteFile(path, data, 0o600)
		}, false},
		{"unknown field", func(t *testing.T, path string) {
			data := bytes.Replace(read(t, path), []byte(`"version": 1,`), []byte(`"version": 1, "reset": true,`), 1)
			os.WriteFile(path, data, 0o600)
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, id := setup(t)
			c.damage(t, path)
			damaged := read(t, path)
			want := ""
			if c.release {
				want = id
			}
			_, err := Load(path)
			assertFileError(t, "Load", err, path, want)
			_, err = Reserve(path, "mnist", "train", "", gaussian(100))
			assertFileError(t, "Reserve", err, path, want)
			if !bytes.Equal(damaged, read(t, path)) {
				t.Error("Reserve changed a damaged file")
			}
		})
	}
	t.Run("version 99 says so", func(t *testing.T) {
		path, _ := setup(t)
		os.WriteFile(path, bytes.Replace(read(t, path), []byte(`"version": 1`), []byte(`"version": 99`), 1), 0o600)
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "version 99") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "none")
		_, err := Load(path)
		assertFileError(t, "Load", err, path, "")
		_, err = Reserve(path, "mnist", "train", "", gaussian(100))
		assertFileError(t, "Reserve", err, path, "")
		if _, err := os.Stat(path + ".lock"); err == nil {
			t.Error("Reserve of a missing file created a lock file")
		}
	})
}

func TestReserveChecksDatasetAndEvents(t *testing.T) {
	path := newBudget(t, 1.5, 1e-5)
	before := read(t, path)
	_, err := Reserve(path, "cifar10", "train", "", gaussian(100))
	assertFileError(t, "other dataset", err, path, "")
	_, err = Reserve(path, "mnist", "train", "", ledgerOf("opaque", accounting.EpsilonDelta{Epsilon: 0.1, Delta: 1e-7}))
	assertFileError(t, "(ε, δ) event", err, path, "")
	if !errors.Is(err, accounting.ErrUnsupported) {
		t.Errorf("error %v does not wrap ErrUnsupported", err)
	}
	_, err = Reserve(path, "mnist", "train", "", ledgerOf("no noise", accounting.NonPrivate{Reason: "test"}))
	assertFileError(t, "non-private", err, path, "")
	if !errors.Is(err, ErrExceeded) {
		t.Errorf("error %v does not wrap ErrExceeded", err)
	}
	if !bytes.Equal(before, read(t, path)) {
		t.Error("a refused reservation changed the file")
	}
}

func TestCommitOfVanishedReservation(t *testing.T) {
	path := newBudget(t, 1.5, 1e-5)
	res, err := Reserve(path, "mnist", "train", "", gaussian(10))
	if err != nil {
		t.Fatal(err)
	}
	reseal(t, path, func(f *fileJSON) { f.Releases = nil })
	err = res.Commit(gaussian(10))
	assertFileError(t, "Commit", err, path, res.ID())
	if !strings.Contains(err.Error(), "modified concurrently") {
		t.Errorf("error %q", err)
	}
}

// A run that spent more than it reserved is recorded, and Commit says so.
func TestCommitLargerThanReserved(t *testing.T) {
	path := newBudget(t, 1.5, 1e-5)
	res, err := Reserve(path, "mnist", "train", "", ledgerOf("dpsgd", accounting.DPSGD(1.1, 0.01, 100)))
	if err != nil {
		t.Fatal(err)
	}
	actual := ledgerOf("dpsgd", accounting.DPSGD(1.1, 0.01, 100000))
	cerr := res.Commit(actual)
	assertFileError(t, "Commit of more than reserved", cerr, path, res.ID())
	if !errors.Is(cerr, ErrExceeded) {
		t.Errorf("error %v does not wrap ErrExceeded", cerr)
	}
	b := load(t, path)
	want, err := accounting.RDP{Orders: theOrders}.RDP(actual.Event())
	if err != nil {
		t.Fatal(err)
	}
	if b.Releases[0].Status != Done || !near(b.Releases[0].RDP[3], want[3], 1e-12) {
		t.Errorf("release %+v not recorded as what ran", b.Releases[0])
	}
	if !(b.Remaining() < 0) {
		t.Errorf("remaining %v after overspending", b.Remaining())
	}
	if !strings.Contains(cerr.Error(), "over the cap") {
		t.Errorf("message %q", cerr)
	}
}

// A non-private run recorded after it happened makes the total +∞; the
// file stays readable.
func TestCommitOfNonPrivateRun(t *testing.T) {
	path := newBudget(t, 1.5, 1e-5)
	res, err := Reserve(path, "mnist", "train", "", gaussian(10))
	if err != nil {
		t.Fatal(err)
	}
	err = res.Commit(ledgerOf("no noise", accounting.NonPrivate{Reason: "test"}))
	if !errors.Is(err, ErrExceeded) {
		t.Fatalf("error %v does not wrap ErrExceeded", err)
	}
	b := load(t, path)
	if !math.IsInf(b.Spent(), 1) || !math.IsInf(b.Releases[0].Epsilon, 1) {
		t.Errorf("spent %v, release ε %v; want +Inf", b.Spent(), b.Releases[0].Epsilon)
	}
	if _, err := json.Marshal(b.Show()); err != nil {
		t.Error(err)
	}
	_, err = Reserve(path, "mnist", "train", "", gaussian(1000))
	if !errors.Is(err, ErrExceeded) {
		t.Errorf("reserving on a spent budget: %v", err)
	}
}

func TestShow(t *testing.T) {
	path := newBudget(t, 4, 1e-5)
	a := ledgerOf("dpsgd", accounting.DPSGD(1.1, 0.01, 300))
	res, err := Reserve(path, "mnist", "train", "first", a)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Commit(a); err != nil {
		t.Fatal(err)
	}
	if _, err := Reserve(path, "mnist", "train", "second", a); err != nil {
		t.Fatal(err)
	}
	r := load(t, path).Show()
	if len(r.Releases) != 2 || r.Releases[0].Status != Done || r.Releases[1].Status != Reserved || r.Releases[1].Label != "second" {
		t.Fatalf("report %+v", r)
	}
	if !r.PLD.Available {
		t.Fatalf("PLD unavailable: %s", r.PLD.Reason)
	}
	pld, err := accounting.PLD{}.Epsilon(accounting.Composed{Events: []accounting.Event{a.Event(), a.Event()}}, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.PLD.Epsilon, pld.Epsilon, 1e-12) {
		t.Errorf("PLD %v, want %v", r.PLD.Epsilon, pld.Epsilon)
	}
	if !(r.PLD.Epsilon < r.Spent) || !near(r.Remaining, 4-r.Spent, 1e-12) || r.Order == 0 {
		t.Errorf("PLD %v, filter %v at order %v, remaining %v", r.PLD.Epsilon, r.Spent, r.Order, r.Remaining)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("informational only")) {
		t.Errorf("JSON report does not label PLD: %s", out)
	}

	// Tuning is counted by RDP only: PLD says why it has no figure.
	tune := ledgerOf("tuning", accounting.RepeatAndSelect{Event: accounting.DPSGD(3, 0.01, 100), Repetitions: accounting.TNBRepetitions(1, 0.2)})
	if _, err := Reserve(path, "mnist", "tune", "", tune); err != nil {
		t.Fatal(err)
	}
	r = load(t, path).Show()
	if r.PLD.Available || r.PLD.Reason == "" {
		t.Errorf("PLD with a tuning event: %+v", r.PLD)
	}
}

// A run killed with SIGKILL after reserving never commits: its worst case
// stays charged, and the kernel releases its lock.
func TestKilledRunStaysCharged(t *testing.T) {
	// One worst case (ε ≈ 2.09 by the filter) fits, two (≈ 2.54) do not.
	path := newBudget(t, 2.3, 1e-5)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperReserveAndHang$")
	cmd.Env = append(os.Environ(), "BUDGET_TEST_HELPER_FILE="+path)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "reserved ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q, %v", line, err)
	}
	id := strings.TrimSpace(strings.TrimPrefix(line, "reserved "))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()

	b := load(t, path)
	if len(b.Releases) != 1 || b.Releases[0].ID != id || b.Releases[0].Status != Reserved {
		t.Fatalf("after the kill: %+v", b.Releases)
	}
	worst, err := accounting.RDP{Orders: theOrders}.RDP(func() accounting.Event { l := helperWorst(); return l.Event() }())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := FilterEpsilon(theOrders, worst, 1e-5)
	if !near(b.Spent(), want, 1e-12) {
		t.Errorf("spent %v, want the killed run's worst case %v", b.Spent(), want)
	}
	// The lock is free, and the killed run's reservation counts against a
	// new one: the same run again does not fit.
	done := make(chan error, 1)
	go func() { _, err := Reserve(path, "mnist", "train", "again", helperWorst()); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrExceeded) {
			t.Errorf("a second worst case after the killed one: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the killed run's lock was not released")
	}
}

func helperWorst() accounting.Ledger {
	return ledgerOf("dpsgd", accounting.DPSGD(1.0, 0.01, 500))
}

// TestHelperReserveAndHang is the process TestKilledRunStaysCharged kills.
func TestHelperReserveAndHang(t *testing.T) {
	path := os.Getenv("BUDGET_TEST_HELPER_FILE")
	if path == "" {
		t.Skip("helper process for TestKilledRunStaysCharged")
	}
	res, err := Reserve(path, "mnist", "train", "killed", helperWorst())
	if err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("reserved " + res.ID() + "\n")
	time.Sleep(time.Hour)
}

// Settle ends a bound reservation at the worst case it reserved, never
// lower, and only for the run it was made for: another binding is refused
// and changes nothing; a settled or missing reservation is not found.
func TestSettleKeepsTheWorstCase(t *testing.T) {
	path := newBudget(t, 50, 1e-5)
	worst := ledgerOf("dpsgd", accounting.DPSGD(1.1, 0.01, 100))
	res, err := ReserveBound(path, "mnist", "train", "run [a]", "steps 1–100", worst)
	if err != nil {
		t.Fatal(err)
	}
	reserved := load(t, path).Releases[0]
	if reserved.Binding != "steps 1–100" || reserved.Status != Reserved {
		t.Fatalf("reserved %+v", reserved)
	}
	before := read(t, path)
	if _, err := Settle(path, "mnist", "train", "run [a]", "steps 1–50"); err == nil || !strings.Contains(err.Error(), "another run") {
		t.Errorf("another binding: %v", err)
	}
	if !bytes.Equal(before, read(t, path)) {
		t.Error("a refused Settle changed the file")
	}
	if _, err := Settle(path, "cifar10", "train", "run [a]", "steps 1–100"); !errors.Is(err, ErrOtherDataset) {
		t.Errorf("another dataset: %v", err)
	}
	found, err := Settle(path, "mnist", "train", "run [a]", "steps 1–100")
	if err != nil || !found {
		t.Fatalf("Settle: %v, %v", found, err)
	}
	settled := load(t, path).Releases[0]
	if settled.Status != Done || !reflect.DeepEqual(settled.RDP, reserved.RDP) || settled.Epsilon != reserved.Epsilon {
		t.Errorf("settled %+v, reserved %+v", settled, reserved)
	}
	if found, err := Settle(path, "mnist", "train", "run [a]", "steps 1–100"); found || err != nil {
		t.Errorf("settling twice: %v, %v", found, err)
	}
	if err := res.Commit(ledgerOf("dpsgd", accounting.DPSGD(1.1, 0.01, 1))); err == nil {
		t.Error("a settled reservation was committed lower")
	}
}
