package secagg

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/hashicorp/vault/shamir"

	"github.com/dptune/dptune/federated/pki"
)

// credentials writes a CA and n client certificates into a temporary
// directory and returns each client's Auth.
func credentials(t *testing.T, n int) []*Auth {
	t.Helper()
	dir := t.TempDir()
	if err := pki.Generate(dir, n, nil, false); err != nil {
		t.Fatal(err)
	}
	var out []*Auth
	for i := 1; i <= n; i++ {
		c, err := pki.ClientTLS(filepath.Join(dir, fmt.Sprintf("client-%d.pem", i)), filepath.Join(dir, fmt.Sprintf("client-%d.key", i)), filepath.Join(dir, "ca.pem"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &Auth{Cert: c.Cert, Key: c.Key, Roots: c.Roots})
	}
	return out
}

var (
	credsOnce sync.Once
	creds4    [][]*Auth // two independent CAs of 4 clients each
)

// fourClients returns the Auths of 4 clients of one CA (which = 0) or of
// another (which = 1), made once per test binary.
func fourClients(t *testing.T, which int) []*Auth {
	credsOnce.Do(func() { creds4 = [][]*Auth{credentials(t, 4), credentials(t, 4)} })
	return creds4[which]
}

// authSession is a session whose clients sign with auth.
func authSession(t *testing.T, p Params, auth []*Auth) *session {
	t.Helper()
	s := newSession(t, p, 11)
	for id := range s.clients {
		c, err := NewClient(p, id, mrand.NewChaCha8([32]byte{11, byte(id)}), auth[id])
		if err != nil {
			t.Fatal(err)
		}
		s.clients[id] = c
	}
	return s
}

// TestAuthenticatedSumIsExact: the actively secure variant sums exactly,
// with a dropout in the signing round.
func TestAuthenticatedSumIsExact(t *testing.T) {
	s := authSession(t, Params{Clients: 4, Threshold: 3, Length: 7, Session: []byte("s1")}, fourClients(t, 0))
	sum, u3, err := s.run(map[int][]int{4: {2}})
	if err != nil {
		t.Fatal(err)
	}
	if want := s.want([]int{0, 1, 2, 3}); !slices.Equal(u3, []int{0, 1, 2, 3}) || !slices.Equal(sum, want) {
		t.Fatalf("sum %v over %v, want %v", sum[:3], u3, want[:3])
	}
}

// splitU3 plays Bonawitz et al.'s attack on the unmasking with n = 4 and
// threshold t: a malicious server that got every masked input tells
// clients 0 and 3 that U3 = {0, 1, 2, 3} and clients 1 and 2 that
// U3 = {0, 1, 2} (client 3 "dropped"), hands each group the signatures
// on its own set, and asks both for their unmasking shares: b_3 from the
// first group, s_3^SK from the second, which with y_3 gives x_3. It
// returns what the server recovered for x_3 (nil if it got too little)
// and the clients' errors. With forge the server instead names every
// member of each set as a signer, with empty signatures.
func splitU3(t *testing.T, s *session, forge bool) ([]uint64, []error) {
	t.Helper()
	p := s.p
	var u1 []Keys
	for _, c := range s.clients {
		k, err := c.AdvertiseKeys()
		if err != nil {
			t.Fatal(err)
		}
		u1 = append(u1, k)
	}
	in := map[int]map[int][]byte{}
	for _, c := range s.clients {
		m, err := c.ShareKeys(u1)
		if err != nil {
			t.Fatal(err)
		}
		for v, ct := range m.Ciphertext {
			if in[v] == nil {
				in[v] = map[int][]byte{}
			}
			in[v][m.From] = ct
		}
	}
	var y3 []uint64
	for id, c := range s.clients {
		m, err := c.MaskInput(s.x[id], in[id])
		if err != nil {
			t.Fatal(err)
		}
		if id == 3 {
			y3 = m.Y
		}
	}
	groups := [][]int{{0, 3}, {1, 2}}
	sets := [][]int{{0, 1, 2, 3}, {0, 1, 2}}
	errs := make([]error, p.Clients)
	var shares [2][][]byte // [0]: shares of b_3; [1]: shares of s_3^SK
	for g, members := range groups {
		var sigs []Signature
		for _, id := range members {
			sig, err := s.clients[id].ConsistencyCheck(sets[g])
			if err != nil {
				t.Fatal(err)
			}
			sigs = append(sigs, sig)
		}
		if forge {
			sigs = nil
			for _, id := range sets[g] {
				sigs = append(sigs, Signature{From: id})
			}
		}
		for _, id := range members {
			m, err := s.clients[id].Unmask(sigs)
			if errs[id] = err; err != nil {
				continue
			}
			if g == 0 {
				shares[0] = append(shares[0], m.SelfMask[3])
			} else {
				shares[1] = append(shares[1], m.MaskKeys[3])
			}
		}
	}
	if len(shares[0]) < p.Threshold || len(shares[1]) < p.Threshold {
		return nil, errs
	}
	b3, err := shamir.Combine(shares[0])
	if err != nil {
		t.Fatal(err)
	}
	raw, err := shamir.Combine(shares[1])
	if err != nil {
		t.Fatal(err)
	}
	s3, err := ecdh.X25519().NewPrivateKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	x := slices.Clone(y3)
	if err := addPRG(x, b3, -1); err != nil {
		t.Fatal(err)
	}
	for _, v := range []int{0, 1, 2} {
		key, err := deriveKey(s3, u1[v].MaskKey, pairLabel(3, v))
		if err != nil {
			t.Fatal(err)
		}
		if err := addPRG(x, key, -pairSign(3, v)); err != nil {
			t.Fatal(err)
		}
	}
	return x, errs
}

// TestSplitU3AttackRefused: with the threshold 2t ≤ n (t = 2 of 4) the
// split-U3 attack recovers client 3's input exactly — the attack is real;
// with t = 3 (2t > n + c for c = 0, the rule the vote now uses) every
// client sees fewer than t signatures on the U3 it was sent and aborts
// before revealing a share, so the server learns neither b_3 nor s_3^SK.
// Handing one group the other's signatures fails their check as well.
func TestSplitU3AttackRefused(t *testing.T) {
	auth := fourClients(t, 0)
	weak := authSession(t, Params{Clients: 4, Threshold: 2, Length: 9, Session: []byte("weak")}, auth)
	x, _ := splitU3(t, weak, false)
	if !slices.Equal(x, weak.x[3]) {
		t.Fatalf("with t = 2 the attack should recover x_3 = %v, got %v", weak.x[3][:2], x)
	}

	strong := authSession(t, Params{Clients: 4, Threshold: 3, Length: 9, Session: []byte("strong")}, auth)
	x, errs := splitU3(t, strong, false)
	if x != nil {
		t.Fatalf("with t = 3 the server recovered %v", x[:2])
	}
	for id, err := range errs {
		if !errors.Is(err, ErrRefused) {
			t.Errorf("client %d revealed its shares: %v", id, err)
		}
	}

	// The server pads group {0, 3}'s two signatures with client 1's
	// signature on the other set: it is not a signature on {0, 1, 2, 3}.
	s := authSession(t, Params{Clients: 4, Threshold: 3, Length: 9, Session: []byte("mixed")}, auth)
	var u1 []Keys
	for _, c := range s.clients {
		k, _ := c.AdvertiseKeys()
		u1 = append(u1, k)
	}
	in := map[int]map[int][]byte{}
	for _, c := range s.clients {
		m, err := c.ShareKeys(u1)
		if err != nil {
			t.Fatal(err)
		}
		for v, ct := range m.Ciphertext {
			if in[v] == nil {
				in[v] = map[int][]byte{}
			}
			in[v][m.From] = ct
		}
	}
	for id, c := range s.clients {
		if _, err := c.MaskInput(s.x[id], in[id]); err != nil {
			t.Fatal(err)
		}
	}
	a0, _ := s.clients[0].ConsistencyCheck([]int{0, 1, 2, 3})
	a3, _ := s.clients[3].ConsistencyCheck([]int{0, 1, 2, 3})
	b1, _ := s.clients[1].ConsistencyCheck([]int{0, 1, 2})
	if m, err := s.clients[0].Unmask([]Signature{a0, b1, a3}); !errors.Is(err, ErrRefused) {
		t.Errorf("client 0 revealed %d shares on a signature for another U3", len(m.SelfMask))
	}
	// A server that names every member of each set as a signer, with
	// made-up signatures, gets nothing from authenticated clients; without
	// certificates (the semi-honest variant) the same lists pass the check,
	// which then only counts, and every client reveals.
	forged := authSession(t, Params{Clients: 4, Threshold: 3, Length: 9, Session: []byte("forged")}, auth)
	if x, errs := splitU3(t, forged, true); x != nil || slices.ContainsFunc(errs, func(err error) bool { return !errors.Is(err, ErrRefused) }) {
		t.Errorf("forged signatures: recovered %v, clients' errors %v", x, errs)
	}
	plain := newSession(t, Params{Clients: 4, Threshold: 3, Length: 9}, 12)
	if _, errs := splitU3(t, plain, true); slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		t.Errorf("unauthenticated clients refused a forged U4: %v", errs)
	}
}

// TestForgedKeysRefused: every client refuses (and aborts before sending a
// share) a round-0 list in which one client's keys were replaced by the
// server's, left unsigned, signed under another client's certificate, or
// come with a certificate from another CA.
func TestForgedKeysRefused(t *testing.T) {
	p := Params{Clients: 4, Threshold: 3, Length: 3, Session: []byte("keys")}
	auth, other := fourClients(t, 0), fourClients(t, 1)
	cases := map[string]func(k *Keys){
		"a replaced mask key": func(k *Keys) {
			pub, _, _ := ed25519.GenerateKey(rand.Reader)
			copy(k.MaskKey, pub)
		},
		"no signature":                       func(k *Keys) { k.Sig = nil },
		"client 1's certificate":             func(k *Keys) { k.Cert = auth[1].Cert },
		"a certificate from another CA":      func(k *Keys) { k.Cert = other[2].Cert },
		"another CA's certificate re-signed": nil,
	}
	for name, tamper := range cases {
		s := authSession(t, p, auth)
		var u1 []Keys
		for id, c := range s.clients {
			k, err := c.AdvertiseKeys()
			if err != nil {
				t.Fatal(err)
			}
			if id == 2 {
				if tamper == nil {
					// The server makes client 2's keys itself and signs them
					// with a certificate for client 2 from another CA.
					k.Cert = other[2].Cert
					if k.Sig, err = pki.Sign(other[2].Key, keysMessage(p.Session, k)); err != nil {
						t.Fatal(err)
					}
				} else {
					tamper(&k)
				}
			}
			u1 = append(u1, k)
		}
		for id, c := range s.clients {
			if id == 2 {
				continue
			}
			if m, err := c.ShareKeys(u1); !errors.Is(err, ErrRefused) {
				t.Errorf("%s: client %d sent %d shares", name, id, len(m.Ciphertext))
			}
			if _, err := c.MaskInput(s.x[id], nil); !errors.Is(err, ErrRefused) {
				t.Errorf("%s: client %d went on after refusing: %v", name, id, err)
			}
		}
	}
	// A client's own certificate must chain to its CA and bind its ID.
	if _, err := NewClient(p, 1, rand.Reader, &Auth{Cert: auth[2].Cert, Key: auth[2].Key, Roots: auth[2].Roots}); err == nil {
		t.Error("client 1 started with client 2's certificate")
	}
	if _, err := NewClient(p, 2, rand.Reader, &Auth{Cert: other[2].Cert, Key: other[2].Key, Roots: auth[2].Roots}); err == nil {
		t.Error("a client started with a certificate from another CA")
	}
}

// TestSmallU3Refused: a client refuses to sign a U3 smaller than
// MinSurvivors even when it reaches the threshold, so a server cannot
// shrink the sum below the inputs its noise was calibrated for.
func TestSmallU3Refused(t *testing.T) {
	p := Params{Clients: 4, Threshold: 3, Length: 2, MinSurvivors: 4}
	s := newSession(t, p, 13)
	var u1 []Keys
	for _, c := range s.clients {
		k, _ := c.AdvertiseKeys()
		u1 = append(u1, k)
	}
	in := map[int][]byte{}
	for _, c := range s.clients {
		m, err := c.ShareKeys(u1)
		if err != nil {
			t.Fatal(err)
		}
		in[m.From] = m.Ciphertext[0]
	}
	if _, err := s.clients[0].MaskInput(s.x[0], in); err != nil {
		t.Fatal(err)
	}
	if _, err := s.clients[0].ConsistencyCheck([]int{0, 1, 2}); !errors.Is(err, ErrRefused) {
		t.Errorf("signed a U3 of 3 with 4 survivors needed: %v", err)
	}
	if sum, _, err := newSession(t, p, 14).run(nil); err != nil || len(sum) != 2 {
		t.Errorf("all four: %v", err)
	}
}
