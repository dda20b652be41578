package secagg

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
)

// session runs the protocol in memory. drop[r] lists the clients that send
// nothing from round r on.
type session struct {
	t       *testing.T
	p       Params
	clients []*Client
	server  *Server
	x       [][]uint64
}

func newSession(t *testing.T, p Params, seed uint64) *session {
	t.Helper()
	s := &session{t: t, p: p}
	r := rand.New(rand.NewPCG(seed, 1))
	for id := 0; id < p.Clients; id++ {
		c, err := NewClient(p, id, rand.NewChaCha8([32]byte{byte(seed), byte(id)}), nil)
		if err != nil {
			t.Fatal(err)
		}
		s.clients = append(s.clients, c)
		x := make([]uint64, p.Length)
		for i := range x {
			x[i] = r.Uint64() // the whole ring: sums wrap
		}
		s.x = append(s.x, x)
	}
	var err error
	if s.server, err = NewServer(p); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *session) run(drop map[int][]int) ([]uint64, []int, error) {
	t := s.t
	gone := map[int]bool{}
	leave := func(r int) {
		for _, id := range drop[r] {
			gone[id] = true
		}
	}
	leave(0)
	for id, c := range s.clients {
		if gone[id] {
			continue
		}
		k, err := c.AdvertiseKeys()
		if err != nil {
			t.Fatal(err)
		}
		if err := s.server.AddKeys(k); err != nil {
			t.Fatal(err)
		}
	}
	u1, err := s.server.CloseKeys()
	if err != nil {
		return nil, nil, err
	}
	leave(1)
	for id, c := range s.clients {
		if gone[id] {
			continue
		}
		m, err := c.ShareKeys(u1)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.server.AddShares(m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.server.CloseShares(); err != nil {
		return nil, nil, err
	}
	leave(2)
	for id, c := range s.clients {
		if gone[id] {
			continue
		}
		in, err := s.server.SharesFor(id)
		if err != nil {
			t.Fatal(err)
		}
		m, err := c.MaskInput(s.x[id], in)
		if err != nil {
			return nil, nil, err
		}
		if err := s.server.AddMasked(m); err != nil {
			t.Fatal(err)
		}
	}
	u3, err := s.server.CloseMasked()
	if err != nil {
		return nil, nil, err
	}
	leave(3)
	for id, c := range s.clients {
		if gone[id] {
			continue
		}
		m, err := c.ConsistencyCheck(u3)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.server.AddSignature(m); err != nil {
			t.Fatal(err)
		}
	}
	u4, err := s.server.CloseSignatures()
	if err != nil {
		return nil, nil, err
	}
	leave(4)
	for id, c := range s.clients {
		if gone[id] {
			continue
		}
		m, err := c.Unmask(u4)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.server.AddUnmask(m); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := s.server.Sum()
	return sum, u3, err
}

func (s *session) want(ids []int) []uint64 {
	w := make([]uint64, s.p.Length)
	for _, id := range ids {
		for i, v := range s.x[id] {
			w[i] += v
		}
	}
	return w
}

func TestSumIsExact(t *testing.T) {
	s := newSession(t, Params{Clients: 6, Threshold: 4, Length: 33}, 1)
	sum, u3, err := s.run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := s.want([]int{0, 1, 2, 3, 4, 5}); !slices.Equal(u3, []int{0, 1, 2, 3, 4, 5}) || !slices.Equal(sum, want) {
		t.Fatalf("sum %v over %v, want %v", sum[:3], u3, want[:3])
	}
}

// TestDropouts drops one client in each round: the one gone before round 1
// is not in U1, the one gone before round 2 never masked its input, the one
// gone before round 3 is in the sum (its self-mask comes from the others'
// shares). Its late vector is refused.
func TestDropouts(t *testing.T) {
	s := newSession(t, Params{Clients: 7, Threshold: 3, Length: 20}, 2)
	sum, u3, err := s.run(map[int][]int{0: {6}, 1: {5}, 2: {4}, 3: {3}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(u3, []int{0, 1, 2, 3}) {
		t.Fatalf("U3 = %v", u3)
	}
	if want := s.want(u3); !slices.Equal(sum, want) {
		t.Fatalf("sum with dropouts %v, want %v", sum[:3], want[:3])
	}
	late := Masked{From: 4, Y: make([]uint64, 20)}
	if err := s.server.AddMasked(late); !errors.Is(err, ErrLate) {
		t.Errorf("late vector: %v, want ErrLate", err)
	}
}

func TestTooFewSurvivorsAborts(t *testing.T) {
	s := newSession(t, Params{Clients: 5, Threshold: 4, Length: 3}, 3)
	if sum, _, err := s.run(map[int][]int{2: {1, 3}}); err == nil {
		t.Fatalf("summed %v with 3 of 5 clients at threshold 4", sum)
	}
	s = newSession(t, Params{Clients: 5, Threshold: 4, Length: 3}, 4)
	if sum, _, err := s.run(map[int][]int{3: {0, 1}}); err == nil {
		t.Fatalf("summed %v with 3 unmasking answers at threshold 4", sum)
	}
}

// TestMaskedLooksUniform is a χ² test of the server's view of one client:
// the top 4 bits of 8,192 masked words of an all-zero input should be
// uniform over 16 bins. The same test on the unmasked input (all zero) or on
// small integers fails, so it can.
func TestMaskedLooksUniform(t *testing.T) {
	const d = 8192
	s := newSession(t, Params{Clients: 3, Threshold: 2, Length: d}, 5)
	for i := range s.x[1] {
		s.x[1][i] = uint64(i % 3) // a vote-like, far from uniform input
	}
	if _, _, err := s.run(nil); err != nil {
		t.Fatal(err)
	}
	chi2 := func(v []uint64) float64 {
		var bins [16]float64
		for _, w := range v {
			bins[w>>60]++
		}
		e := float64(len(v)) / 16
		c := 0.0
		for _, b := range bins {
			c += (b - e) * (b - e) / e
		}
		return c
	}
	// 37.70 is the 0.999 quantile of χ² with 15 degrees of freedom.
	if c := chi2(s.server.Masked(1)); c > 37.70 {
		t.Errorf("masked vector: χ² = %.1f > 37.70", c)
	}
	if c := chi2(s.x[1]); c <= 37.70 {
		t.Errorf("the plain input passes the test (χ² = %.1f): the test cannot fail", c)
	}
}

func TestTamperingAborts(t *testing.T) {
	// An altered share in transit fails authentication at its recipient.
	s := newSession(t, Params{Clients: 4, Threshold: 3, Length: 5}, 6)
	for id, c := range s.clients {
		k, _ := c.AdvertiseKeys()
		if err := s.server.AddKeys(k); err != nil {
			t.Fatal(err)
		}
		_ = id
	}
	u1, _ := s.server.CloseKeys()
	for _, c := range s.clients {
		m, _ := c.ShareKeys(u1)
		if m.From == 0 {
			m.Ciphertext[2][20] ^= 1
		}
		if err := s.server.AddShares(m); err != nil {
			t.Fatal(err)
		}
	}
	s.server.CloseShares()
	in, _ := s.server.SharesFor(2)
	if _, err := s.clients[2].MaskInput(s.x[2], in); err == nil {
		t.Error("client 2 accepted an altered share")
	}
	if _, err := s.clients[2].ConsistencyCheck([]int{0, 1, 2}); !errors.Is(err, ErrRefused) {
		t.Errorf("an aborted client answered the unmasking: %v", err)
	}

	// An altered unmasking share fails the commitment check at the server.
	s = newSession(t, Params{Clients: 4, Threshold: 3, Length: 5}, 7)
	for _, c := range s.clients {
		k, _ := c.AdvertiseKeys()
		s.server.AddKeys(k)
	}
	u1, _ = s.server.CloseKeys()
	for _, c := range s.clients {
		m, _ := c.ShareKeys(u1)
		s.server.AddShares(m)
	}
	s.server.CloseShares()
	for id, c := range s.clients {
		in, _ := s.server.SharesFor(id)
		m, err := c.MaskInput(s.x[id], in)
		if err != nil {
			t.Fatal(err)
		}
		s.server.AddMasked(m)
	}
	u3, _ := s.server.CloseMasked()
	for _, c := range s.clients {
		m, _ := c.ConsistencyCheck(u3)
		s.server.AddSignature(m)
	}
	u4, _ := s.server.CloseSignatures()
	for _, c := range s.clients {
		m, _ := c.Unmask(u4)
		if m.From == 1 {
			m.SelfMask[3][0] ^= 0x80
		}
		s.server.AddUnmask(m)
	}
	if sum, err := s.server.Sum(); err == nil {
		t.Errorf("summed %v from an altered share", sum[:2])
	}
}

// TestOneKindOfSharePerClient: an honest client answers the unmasking once;
// a second request — here one that would reveal the other kind of share for
// client 3 — is refused.
func TestOneKindOfSharePerClient(t *testing.T) {
	s := newSession(t, Params{Clients: 4, Threshold: 2, Length: 2}, 8)
	var u1 []Keys
	for _, c := range s.clients {
		k, _ := c.AdvertiseKeys()
		u1 = append(u1, k)
	}
	var in = map[int]map[int][]byte{}
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
	c := s.clients[0]
	if _, err := c.MaskInput(s.x[0], in[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ConsistencyCheck([]int{0, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	all := []Signature{{From: 0}, {From: 1}, {From: 2}, {From: 3}}
	first, err := c.Unmask(all)
	if err != nil || len(first.SelfMask) != 4 || len(first.MaskKeys) != 0 {
		t.Fatalf("first unmasking: %+v, %v", first, err)
	}
	if _, err := c.ConsistencyCheck([]int{0, 1, 2}); !errors.Is(err, ErrRefused) {
		t.Errorf("a second U3: %v, want ErrRefused", err)
	}
	if _, err := c.Unmask(all[:3]); !errors.Is(err, ErrRefused) {
		t.Errorf("second unmasking: %v, want ErrRefused", err)
	}
	if _, err := s.clients[1].ConsistencyCheck([]int{0, 1}); !errors.Is(err, ErrRefused) {
		t.Errorf("signing U3 before masking: %v, want ErrRefused", err)
	}
}

func TestParamsCheck(t *testing.T) {
	for _, p := range []Params{{1, 1, 1, 0, nil}, {256, 2, 1, 0, nil}, {5, 1, 3, 0, nil}, {5, 6, 3, 0, nil}, {5, 3, 0, 0, nil}, {5, 3, MaxLength + 1, 0, nil}, {5, 3, 1, 0, make([]byte, MaxSession+1)}, {5, 3, 1, 6, nil}} {
		if err := p.Check(); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
}
