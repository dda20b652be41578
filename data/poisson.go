package data

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
)

// PoissonSubsampleMAC keeps each example of d independently with
// probability q ∈ (0, 1] under a secret 256-bit key: a Poisson subsample,
// the tuning subset of Koskela & Kulkarni (NeurIPS 2023), whose
// amplification needs every example's membership independent of the
// others' and unknown to whoever lacks the key. An example's membership
// comes from HMAC-SHA256(key, SHA-256(label ‖ pixels) ‖ k) (RFC 2104, a
// pseudorandom function), k being how many identical examples come before
// it in d: identical examples are independent draws too, so adding one
// example to any data set adds one independent Bernoulli(q) draw and
// changes nothing else, whatever the order or duplicates (KeyedSplit's
// hash of the example alone would put duplicates together). The subset is
// a copy named "NAME/subsample"; its size is Binomial(N, q) and must not be
// released. q = 1 keeps every example.
func PoissonSubsampleMAC(d *Dataset, q float64, key [32]byte) (*Dataset, error) {
	keep, err := PoissonKeepMAC(d, q, key)
	if err != nil {
		return nil, err
	}
	return d.Subset(d.Name+"/subsample", keep), nil
}

// PoissonKeepMAC is the indices of the examples PoissonSubsampleMAC keeps,
// in order: applied to another set in the same order (the features of d's
// images), they keep the same examples — membership is decided on the
// examples as read, so every machine that reads them draws the same subset
// even where its features differ in the last bits.
func PoissonKeepMAC(d *Dataset, q float64, key [32]byte) ([]int, error) {
	m := hmac.New(sha256.New, key[:])
	return poissonKeep(d, q, func(b []byte) uint64 {
		m.Reset()
		m.Write(b)
		return binary.LittleEndian.Uint64(m.Sum(nil))
	})
}

// PoissonSubsample is PoissonSubsampleMAC with a 64-bit key and a fast
// non-cryptographic keyed hash, for a seeded (reproducible) run: whoever
// knows the key knows the subset.
func PoissonSubsample(d *Dataset, q float64, key uint64) (*Dataset, error) {
	keep, err := PoissonKeep(d, q, key)
	if err != nil {
		return nil, err
	}
	return d.Subset(d.Name+"/subsample", keep), nil
}

// PoissonKeep is PoissonKeepMAC with PoissonSubsample's key.
func PoissonKeep(d *Dataset, q float64, key uint64) ([]int, error) {
	prefix := binary.LittleEndian.AppendUint64(nil, key)
	return poissonKeep(d, q, func(b []byte) uint64 { return hash64(append(prefix, b...)) })
}

func poissonKeep(d *Dataset, q float64, hash func([]byte) uint64) ([]int, error) {
	if !(q > 0 && q <= 1) {
		return nil, fmt.Errorf("poisson subsample %s: ratio %v is outside (0, 1]", d.Name, q)
	}
	size := d.ExampleSize()
	buf := make([]byte, 1+4*size)
	seen := map[[sha256.Size]byte]uint64{}
	var keep []int
	for i := 0; i < d.N; i++ {
		buf[0] = d.Y[i]
		for j, v := range d.X[i*size : (i+1)*size] {
			binary.LittleEndian.PutUint32(buf[1+4*j:], math.Float32bits(v))
		}
		digest := sha256.Sum256(buf)
		k := seen[digest]
		seen[digest] = k + 1
		u := float64(hash(binary.LittleEndian.AppendUint64(digest[:], k))>>11) / (1 << 53)
		if u < q {
			keep = append(keep, i)
		}
	}
	return keep, nil
}
