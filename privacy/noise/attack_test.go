package noise

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// zigguratTables rebuilds the strip widths wn and fast-path bounds kn of Go's
// math/rand NormFloat64 from the Marsaglia–Tsang (2000) construction the Go
// source cites: 128 strips, dn = 3.442619855899 (the base strip's right
// edge), vn = 9.91256303526217e-3 (each strip's area), m1 = 2³¹.
func zigguratTables() (wn [128]float32, kn [128]uint32) {
	const m1 = 1 << 31
	dn := 3.442619855899
	tn := dn
	const vn = 9.91256303526217e-3
	q := vn / math.Exp(-0.5*dn*dn)
	kn[0] = uint32((dn / q) * m1)
	kn[1] = 0
	wn[0] = float32(q / m1)
	wn[127] = float32(dn / m1)
	for i := 126; i >= 1; i-- {
		dn = math.Sqrt(-2 * math.Log(vn/dn+math.Exp(-0.5*dn*dn)))
		kn[i+1] = uint32((dn / tn) * m1)
		tn = dn
		wn[i] = float32(dn / m1)
	}
	return wn, kn
}

// firstDrawRand is a ChaCha8 stream whose key encodes k: each of the streams
// used to check the table is fresh, so the draw examined is its first.
func firstDrawRand(k uint64) *rand.Rand {
	var key [32]byte
	copy(key[:], "ziggurat check")
	binary.LittleEndian.PutUint64(key[24:], k)
	return rand.New(rand.NewChaCha8(key))
}

// TestZigguratTable checks the rebuilt table against the real generator: for
// a fresh stream, NormFloat64 reads one word u, takes j = int32(u) and
// i = u>>32 & 0x7F, and when |j| < kn[i] (the fast path) returns exactly
// float64(j)·float64(wn[i]). The same word read with Uint64 from a twin stream
// must give the same value, for every strip i.
func TestZigguratTable(t *testing.T) {
	wn, kn := zigguratTables()
	const draws = 40_000
	var seen [128]int
	fast := 0
	for k := range uint64(draws) {
		got := firstDrawRand(k).NormFloat64()
		u := firstDrawRand(k).Uint64()
		j := int32(u)
		i := u >> 32 & 0x7F
		x := float64(j) * float64(wn[i])
		aj := uint32(j)
		if j < 0 {
			aj = uint32(-j)
		}
		if aj >= kn[i] {
			continue // slow path: the generator reads more words
		}
		fast++
		seen[i]++
		if got != x {
			t.Fatalf("draw %d: NormFloat64 = %v, rebuilt table gives %v (i=%d, j=%d, wn[i]=%v)", k, got, x, i, j, wn[i])
		}
	}
	for i, c := range seen {
		if c == 0 && kn[i] > 0 {
			t.Errorf("strip %d never checked", i)
		}
	}
	// The fast path's probability is the mean of kn[i]/2³¹ over the strips
	// (≈ 97.2%); the wedge tests of strips 1–127 accept further lattice
	// values, so over 99% of outputs lie on a lattice.
	var p float64
	for _, b := range kn {
		p += float64(b) / (1 << 31) / 128
	}
	rate := float64(fast) / draws
	t.Logf("fast path in %d of %d first draws (%.2f%%; table gives %.2f%%)", fast, draws, 100*rate, 100*p)
	if tol := 5 * math.Sqrt(p*(1-p)/draws); math.Abs(rate-p) > tol {
		t.Errorf("fast path rate %v, want %v ± %v", rate, p, tol)
	}
}

// TestFloatingPointAttack is Mironov's (2012) low-bit attack on a released
// validation accuracy, and its failure against NoisyCount.
//
// The old mechanism releases y = c/n + (s/n)·NormFloat64() for the count c of
// correct predictions among n validation examples. An attacker who knows s
// and n calls a candidate count c' consistent with y if some ziggurat lattice
// point z = float64(j)·float64(wn[i]) gives c'/n + (s/n)·z == y exactly, with
// the mechanism's own float64 operations. The true count is (almost) always
// consistent, and usually it is the only one near y: the release gives c away.
//
// The new mechanism releases y = float64(NoisyCount(c, s))/float64(n), an
// integer over n: for every candidate c' there is an integer noise value z
// with float64(c'+z)/float64(n) == y, so the low bits say nothing about c.
func TestFloatingPointAttack(t *testing.T) {
	wn, _ := zigguratTables()
	const (
		n        = 5000 // validation examples
		s        = 20.0 // noise multiplier, in counts
		releases = 2000
		window   = 20 // candidates c−20 … c+20
	)
	nf := float64(n)
	step := s / nf
	// release computes the old mechanism's output from a count and a standard
	// normal value. The explicit float64 conversion of the product forbids a
	// fused multiply-add, so mechanism and attacker round identically.
	release := func(c int, z float64) float64 {
		return float64(c)/nf + float64(step*z)
	}
	consistent := func(y float64, c int) bool {
		r := (y - float64(c)/nf) / step
		for i := range wn {
			w := float64(wn[i])
			j0 := math.Round(r / w)
			for dj := -2.0; dj <= 2; dj++ {
				j := j0 + dj
				if j < math.MinInt32 || j > math.MaxInt32 {
					continue
				}
				if release(c, float64(int32(j))*w) == y {
					return true
				}
			}
		}
		return false
	}

	rng := testRand("attack")
	trueOK, unique := 0, 0
	for range releases {
		c := 4000 + rng.IntN(900) // true count: 80–98% accuracy
		y := release(c, rng.NormFloat64())
		if !consistent(y, c) {
			continue
		}
		trueOK++
		others := 0
		for d := -window; d <= window; d++ {
			if d != 0 && consistent(y, c+d) {
				others++
			}
		}
		if others == 0 {
			unique++
		}
	}
	trueRate := float64(trueOK) / releases
	uniqueRate := float64(unique) / releases
	t.Logf("old mechanism: true count consistent in %d/%d releases (%.1f%%); the only consistent count of %d in %d/%d (%.1f%%)",
		trueOK, releases, 100*trueRate, 2*window+1, unique, releases, 100*uniqueRate)
	if trueRate < 0.99 {
		t.Errorf("true count consistent in only %.1f%% of releases", 100*trueRate)
	}
	if uniqueRate < 0.60 {
		t.Errorf("true count singled out in only %.1f%% of releases", 100*uniqueRate)
	}

	// The new mechanism. The attacker's test: is there an integer z with
	// float64(c'+z)/float64(n) == y? The candidates are the integers next to
	// y·n − c'.
	newConsistent := func(y float64, c int64) bool {
		z0 := int64(math.Round(y*nf)) - c
		for z := z0 - 2; z <= z0+2; z++ {
			if float64(c+z)/nf == y {
				return true
			}
		}
		return false
	}
	rng = testRand("attack, new mechanism")
	for range releases {
		c := int64(4000 + rng.IntN(900))
		m, err := NoisyCount(c, s, rng)
		if err != nil {
			t.Fatal(err)
		}
		y := float64(m) / nf
		for d := int64(-window); d <= window; d++ {
			if !newConsistent(y, c+d) {
				t.Fatalf("new mechanism: release %v rules out count %d (true %d)", y, c+d, c)
			}
		}
	}
}
