package data

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
)

// KeyedSplit assigns every example of d to one of len(fractions) parts by a
// keyed hash of the example itself (its label and pixels) with key: part j
// receives about fractions[j] of the examples. Because each example's part
// depends only on the example and the key, adding or removing one example
// changes exactly one part and nothing else — what a DP analysis under
// add/remove adjacency needs of a split (e.g. Ding et al.'s Lemma 2, or a
// validation split whose scores are released with noise of sensitivity
// 1/n_val). A permutation split (Split, Partition) does not have this
// property: one added example shifts which examples fall in which part. The
// price is that part sizes are random (binomial) rather than fixed. The key
// must be chosen independently of the data; a split whose membership an
// observer should not learn (a validation set, Ding et al.'s parts) keeps it
// secret like any noise seed, while a fixed public subset may publish it.
// Parts are copies named "NAME/part-i".
func KeyedSplit(d *Dataset, fractions []float64, key uint64) ([]*Dataset, error) {
	return keyedSplit(d, fractions, binary.LittleEndian.AppendUint64(nil, key), hash64)
}

// KeyedSplitMAC is KeyedSplit with a secret 256-bit key and a cryptographic
// keyed hash: each example's place comes from HMAC-SHA256(key, label ‖
// pixels) (RFC 2104), a pseudorandom function, so that whoever lacks the key
// cannot tell which part an example fell in better than by chance — what a
// secret split (a validation set, Ding et al.'s parts) needs, where
// KeyedSplit's 64-bit key and FNV hash suit a public or seeded split.
func KeyedSplitMAC(d *Dataset, fractions []float64, key [32]byte) ([]*Dataset, error) {
	m := hmac.New(sha256.New, key[:])
	return keyedSplit(d, fractions, nil, func(b []byte) uint64 {
		m.Reset()
		m.Write(b)
		return binary.LittleEndian.Uint64(m.Sum(nil))
	})
}

// keyedSplit places each example by hash(prefix ‖ label ‖ pixels as
// little-endian float32s).
func keyedSplit(d *Dataset, fractions []float64, prefix []byte, hash func([]byte) uint64) ([]*Dataset, error) {
	if len(fractions) == 0 {
		return nil, fmt.Errorf("keyed split %s: no parts", d.Name)
	}
	cum := make([]float64, len(fractions))
	var total float64
	for i, f := range fractions {
		if !(f > 0) || math.IsInf(f, 1) {
			return nil, fmt.Errorf("keyed split %s: fraction %v", d.Name, f)
		}
		total += f
		cum[i] = total
	}
	idx := make([][]int, len(fractions))
	size := d.ExampleSize()
	n := len(prefix)
	buf := make([]byte, n+1+4*size)
	copy(buf, prefix)
	for i := 0; i < d.N; i++ {
		buf[n] = d.Y[i]
		for j, v := range d.X[i*size : (i+1)*size] {
			binary.LittleEndian.PutUint32(buf[n+1+4*j:], math.Float32bits(v))
		}
		u := float64(hash(buf)>>11) / (1 << 53) * total
		j := 0
		for j < len(cum)-1 && u >= cum[j] {
			j++
		}
		idx[j] = append(idx[j], i)
	}
	parts := make([]*Dataset, len(fractions))
	for j := range parts {
		parts[j] = d.Subset(fmt.Sprintf("%s/part-%d", d.Name, j+1), idx[j])
	}
	return parts, nil
}

// hash64 is 64-bit FNV-1a followed by a SplitMix64 finaliser (FNV alone
// mixes its last bytes poorly into the high bits).
func hash64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
