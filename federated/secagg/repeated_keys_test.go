package secagg

import (
	"crypto/ecdh"
	"crypto/rand"
	mrand "math/rand/v2"
	"testing"

	"github.com/dptune/dptune/federated/pki"
)

// A round-0 message whose keys repeat each other or a key of U1 is refused
// (it would make every honest client refuse U1), and the honest clients
// go on with U1 without it.
func TestServerRefusesRepeatedKeys(t *testing.T) {
	auth := fourClients(t, 0)
	p := Params{Clients: 4, Threshold: 3, Length: 3, Session: []byte("s")}
	srv, err := NewServer(p)
	if err != nil {
		t.Fatal(err)
	}
	var clients []*Client
	var first Keys
	for id := range 3 {
		c, err := NewClient(p, id, mrand.NewChaCha8([32]byte{byte(id)}), auth[id])
		if err != nil {
			t.Fatal(err)
		}
		k, err := c.AdvertiseKeys()
		if err != nil {
			t.Fatal(err)
		}
		if id == 0 {
			first = k
		}
		if err := srv.AddKeys(k); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	fresh, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]Keys{
		"encryption key = masking key":    {ID: 3, EncryptKey: fresh.PublicKey().Bytes(), MaskKey: fresh.PublicKey().Bytes(), Cert: auth[3].Cert},
		"client 0's masking key repeated": {ID: 3, EncryptKey: fresh.PublicKey().Bytes(), MaskKey: first.MaskKey, Cert: auth[3].Cert},
	} {
		k.Sig, err = pki.Sign(auth[3].Key, keysMessage(p.Session, k))
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.AddKeys(k); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	u1, err := srv.CloseKeys()
	if err != nil {
		t.Fatal(err)
	}
	for id, c := range clients {
		if _, err := c.ShareKeys(u1); err != nil {
			t.Errorf("honest client %d: %v", id, err)
		}
	}
}
