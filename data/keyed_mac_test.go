package data

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"testing"
)

// KeyedSplitMAC places each example by HMAC-SHA256 of its label and pixels
// under the whole 32-byte key: recomputed here, every example sits where
// the HMAC says; removing one example moves no other; a key differing in
// its last byte alone gives another split.
func TestKeyedSplitMAC(t *testing.T) {
	n := 2000
	d := &Dataset{Name: "t", X: make([]float32, n*4), Y: make([]uint8, n), N: n, C: 1, H: 2, W: 2, Classes: 10}
	for i := 0; i < n; i++ {
		d.Y[i] = uint8(i % 10)
		for j := 0; j < 4; j++ {
			d.X[i*4+j] = float32(i) + float32(j)/10
		}
	}
	var key [32]byte
	key[0] = 5
	fr := []float64{0.25, 0.75}
	parts, err := KeyedSplitMAC(d, fr, key)
	if err != nil {
		t.Fatal(err)
	}
	want := func(k [32]byte, i int) int {
		b := []byte{d.Y[i]}
		for _, v := range d.X[i*4 : i*4+4] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
		m := hmac.New(sha256.New, k[:])
		m.Write(b)
		if float64(binary.LittleEndian.Uint64(m.Sum(nil))>>11)/(1<<53) < fr[0] {
			return 0
		}
		return 1
	}
	where := map[float32]int{}
	for p, part := range parts {
		for i := 0; i < part.N; i++ {
			where[part.X[i*4]] = p
		}
	}
	if len(where) != n || parts[0].N+parts[1].N != n {
		t.Fatalf("%d of %d examples placed", len(where), n)
	}
	for i := 0; i < n; i++ {
		if where[d.X[i*4]] != want(key, i) {
			t.Fatalf("example %d is in part %d, its HMAC says %d", i, where[d.X[i*4]], want(key, i))
		}
	}
	rest := d.Subset("rest", func() []int {
		idx := make([]int, n-1)
		for i := range idx {
			idx[i] = i + 1
		}
		return idx
	}())
	parts2, _ := KeyedSplitMAC(rest, fr, key)
	for p, part := range parts2 {
		for i := 0; i < part.N; i++ {
			if where[part.X[i*4]] != p {
				t.Fatalf("removing one example moved example %v", part.X[i*4])
			}
		}
	}
	other := key
	other[31] ^= 1
	parts3, _ := KeyedSplitMAC(d, fr, other)
	moved := 0
	for i := 0; i < parts3[0].N; i++ {
		if where[parts3[0].X[i*4]] != 0 {
			moved++
		}
	}
	if moved == 0 {
		t.Error("the key's last byte does not change the split")
	}
}
