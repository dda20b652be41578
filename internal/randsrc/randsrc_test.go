package randsrc

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	mrand "math/rand/v2"
	"testing"
)

// A key's streams are ChaCha8 seeded with HMAC-SHA256 of the whole 32-byte
// key and the purpose: computed here independently, they match; distinct
// purposes, subkeys and keys differing in their last byte give distinct
// streams.
func TestKeyStreams(t *testing.T) {
	var k Key
	for i := range k {
		k[i] = byte(i)
	}
	m := hmac.New(sha256.New, k[:])
	m.Write([]byte("stream\x00noise"))
	var seed [32]byte
	copy(seed[:], m.Sum(nil))
	want := mrand.New(mrand.NewChaCha8(seed)).Uint64()
	if got := k.Stream("noise").Uint64(); got != want {
		t.Fatalf("Stream(noise) starts %x, HMAC-seeded ChaCha8 starts %x", got, want)
	}
	k2 := k
	k2[31] ^= 1 // a uint64 seed would ignore this byte
	first := map[uint64]string{}
	for name, r := range map[string]*mrand.Rand{
		"noise": k.Stream("noise"), "sampling": k.Stream("sampling"),
		"run 1": k.Derive("run 1").Stream("noise"), "run 2": k.Derive("run 2").Stream("noise"),
		"other key": k2.Stream("noise"),
	} {
		v := r.Uint64()
		if prev, dup := first[v]; dup {
			t.Errorf("streams %s and %s start alike", prev, name)
		}
		first[v] = name
	}
	if *k.Derive("run 1") != *k.Derive("run 1") || *k.Derive("run 1") == k {
		t.Error("Derive is not a function of its purpose, or gives the key back")
	}
	if For(nil, &k, "noise").Uint64() != want {
		t.Error("For ignores its key")
	}
	s := uint64(7)
	if For(&s, nil, "noise").Uint64() != Seeded(7, "noise").Uint64() {
		t.Error("For without a key is not Seeded")
	}
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	var back Key
	if err := json.Unmarshal(b, &back); err != nil || back != k {
		t.Fatalf("JSON round trip: %s → %x, %v", b, back, err)
	}
	if err := json.Unmarshal([]byte(`"00ff"`), &back); err == nil {
		t.Error("a short key was accepted")
	}
}

// SourceFor gives For's streams, and a restored state continues them.
func TestSourceForMatchesFor(t *testing.T) {
	seed := uint64(7)
	k := Key{1}
	for _, c := range []struct {
		seed *uint64
		key  *Key
	}{{&seed, nil}, {nil, &k}} {
		a, src := For(c.seed, c.key, "p"), SourceFor(c.seed, c.key, "p")
		b := mrand.New(src)
		for range 5 {
			if x, y := a.Uint64(), b.Uint64(); x != y {
				t.Fatalf("stream differs: %x %x", x, y)
			}
		}
		state, err := src.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var again mrand.ChaCha8
		if err := again.UnmarshalBinary(state); err != nil {
			t.Fatal(err)
		}
		if x, y := a.Uint64(), mrand.New(&again).Uint64(); x != y {
			t.Fatalf("restored stream differs: %x %x", x, y)
		}
	}
}
