package features

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// small returns a front end on 1×8×8 images (J = 1, L = 2: 3 channels of
// 4×4) and a dataset of n random images for it.
func small(t *testing.T, n int, seed uint64) (model.FrontEnd, *data.Dataset) {
	t.Helper()
	a, err := model.NewArch(model.Spec{Name: "s", Layers: []model.LayerSpec{model.Scatter(1, 2), model.Flatten(), model.Linear(3)}}, 1, 8, 8, 3)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := a.FrontEnd()
	if !ok {
		t.Fatal("no front end")
	}
	rng := randsrc.Seeded(seed, "images")
	d := &data.Dataset{Name: "tiny", X: make([]float32, n*64), Y: make([]uint8, n), N: n, C: 1, H: 8, W: 8, Classes: 3}
	for i := range d.X {
		d.X[i] = float32(rng.NormFloat64())
	}
	for i := range d.Y {
		d.Y[i] = uint8(rng.IntN(3))
	}
	return f, d
}

// Compute gives, for every image, the front end's transform of it, with
// the labels, and reports progress up to N.
func TestComputeIsPerImageTransform(t *testing.T) {
	f, d := small(t, 70, 1)
	var last, calls int
	feat, err := Compute(context.Background(), f, d, func(done, total int) {
		if total != d.N || done < last {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last, calls = done, calls+1
	})
	if err != nil {
		t.Fatal(err)
	}
	if last != d.N || calls == 0 {
		t.Errorf("progress ended at %d of %d", last, d.N)
	}
	if feat.N != d.N || feat.C != 3 || feat.H != 4 || feat.W != 4 || !slices.Equal(feat.Y, d.Y) {
		t.Fatalf("features %d×%d×%d×%d", feat.N, feat.C, feat.H, feat.W)
	}
	tr, _ := f.Transformer()
	want := make([]float32, f.OutSize)
	for i := 0; i < d.N; i++ {
		tr(want, d.X[i*64:(i+1)*64])
		if !slices.Equal(feat.X[i*f.OutSize:(i+1)*f.OutSize], want) {
			t.Fatalf("example %d differs from its transform", i)
		}
	}
}

func TestComputeStopsWhenCancelled(t *testing.T) {
	f, d := small(t, 200, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Compute(ctx, f, d, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

// load is Load collecting the warnings.
func load(t *testing.T, dir string, f model.FrontEnd, d *data.Dataset) (*data.Dataset, bool, []string) {
	t.Helper()
	var warns []string
	feat, hit, err := Load(context.Background(), dir, f, d, nil, func(s string) { warns = append(warns, s) })
	if err != nil {
		t.Fatal(err)
	}
	return feat, hit, warns
}

// The first Load computes and stores (0700 directory, 0600 file); the
// second reads the same features back.
func TestLoadCachesPrivately(t *testing.T) {
	f, d := small(t, 9, 3)
	dir := filepath.Join(t.TempDir(), "curator", "features")
	a, hit, warns := load(t, dir, f, d)
	if hit || len(warns) > 0 {
		t.Fatalf("first load: hit %v, warnings %v", hit, warns)
	}
	p := Path(dir, f, d)
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode %v, want 0600", st.Mode().Perm())
	}
	if st, _ := os.Stat(dir); st.Mode().Perm() != 0o700 {
		t.Errorf("cache directory mode %v, want 0700", st.Mode().Perm())
	}
	b, hit, warns := load(t, dir, f, d)
	if !hit || len(warns) > 0 || !slices.Equal(a.X, b.X) || !slices.Equal(a.Y, b.Y) {
		t.Fatalf("second load: hit %v, warnings %v, same %v", hit, warns, slices.Equal(a.X, b.X))
	}
}

// A corrupt, truncated, overlong or foreign file at the cache's path is
// never read as features: it is reported, computed again and replaced.
func TestLoadRebuildsBadCache(t *testing.T) {
	f, d := small(t, 9, 4)
	dir := t.TempDir()
	want, _, _ := load(t, dir, f, d)
	p := Path(dir, f, d)
	good, _ := os.ReadFile(p)
	f2, d2 := small(t, 9, 5) // another dataset's cache file
	other := filepath.Join(t.TempDir(), "x")
	load(t, other, f2, d2)
	foreign, _ := os.ReadFile(Path(other, f2, d2))
	flip := slices.Clone(good)
	flip[len(flip)/2] ^= 1
	for name, content := range map[string][]byte{
		"corrupt":   flip,
		"truncated": good[:len(good)-5],
		"overlong":  append(slices.Clone(good), 0),
		"empty":     nil,
		"foreign":   foreign,
	} {
		if err := os.WriteFile(p, content, 0o600); err != nil {
			t.Fatal(err)
		}
		got, hit, warns := load(t, dir, f, d)
		if hit || len(warns) != 1 || !strings.Contains(warns[0], "not usable") {
			t.Errorf("%s: hit %v, warnings %v", name, hit, warns)
		}
		if !slices.Equal(got.X, want.X) {
			t.Errorf("%s: features differ", name)
		}
		if _, hit, _ := load(t, dir, f, d); !hit {
			t.Errorf("%s: the cache was not rebuilt", name)
		}
	}
}

// Another dataset (one pixel changed) or another transform has its own
// cache file.
func TestCacheKeyedByContentAndTransform(t *testing.T) {
	f, d := small(t, 4, 6)
	dir := t.TempDir()
	p := Path(dir, f, d)
	d.X[17] += 1
	if Path(dir, f, d) == p {
		t.Error("a changed pixel keeps the cache file")
	}
	d.X[17] -= 1
	d.Y[2] = (d.Y[2] + 1) % 3
	if Path(dir, f, d) == p {
		t.Error("a changed label keeps the cache file")
	}
	d.Y[2] = (d.Y[2] + 2) % 3
	g := f
	g.Spec.L = 3
	if Path(dir, g, d) == p || Path(dir, f, d) != p {
		t.Error("the cache file does not follow the transform")
	}
}
