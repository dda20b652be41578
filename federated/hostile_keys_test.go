package federated

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"math/big"
	"net/url"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/federated/pki"
	"github.com/dptune/dptune/federated/secagg"
	pb "github.com/dptune/dptune/federated/votepb"
)

// selfSigned is a certificate for client 3 that no CA issued, with its key.
func selfSigned(t *testing.T) *secagg.Auth {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "evil"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), URIs: []*url.URL{pki.ClientURI(3)}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c)
	return &secagg.Auth{Cert: der, Key: key, Roots: roots}
}

// TestHostileKeysExpelled: over mutual TLS, client 3 (a CA-issued
// certificate, joined) sends round-0 keys that would make every honest
// client abort: signed with a self-signed certificate, with no
// certificate, or with its encryption key repeated as its masking key. The
// server refuses the message and drops client 3, and the three honest
// clients finish the vote (⌈(1−f)n⌉ = 3 with f = ¼).
func TestHostileKeysExpelled(t *testing.T) {
	for _, c := range []struct {
		name string
		keys func(t *testing.T, p secagg.Params, own *secagg.Auth) secagg.Keys
	}{
		{"self-signed certificate", func(t *testing.T, p secagg.Params, _ *secagg.Auth) secagg.Keys {
			return advertise(t, p, selfSigned(t))
		}},
		{"no certificate", func(t *testing.T, p secagg.Params, _ *secagg.Auth) secagg.Keys {
			return advertise(t, p, nil)
		}},
		{"repeated key", func(t *testing.T, p secagg.Params, own *secagg.Auth) secagg.Keys {
			k := advertise(t, p, own)
			k.MaskKey = k.EncryptKey
			return k
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			job := toyJob(t, 4, 0.25)
			srv, err := NewServer(job)
			if err != nil {
				t.Fatal(err)
			}
			dial := mtls(t, srv, 4)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			hconn, hauth := dial(4)
			hostile := pb.NewVoteClient(hconn)
			stream, err := hostile.Join(ctx, &pb.JoinRequest{Part: 4})
			if err != nil {
				t.Fatal(err)
			}
			sess, err := stream.Recv()
			if err != nil {
				t.Fatal(err)
			}
			d := toyData(job.NominalN)
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range 3 {
				conn, auth := dial(i + 1)
				wg.Add(1)
				go func() {
					defer wg.Done()
					seed := uint64(100 + i)
					cl := &Client{Load: func(Job) (*data.Dataset, error) { return d, nil }, Seed: &seed, Part: i + 1, Parts: 4, Auth: auth}
					_, errs[i] = cl.Run(ctx, pb.NewVoteClient(conn))
				}()
			}
			p := secagg.Params{Clients: 4, Threshold: job.Threshold, Length: job.Space.Size(), MinSurvivors: job.Mechanism.MinSurvivors(),
				Session: sumSession(sess.SessionId, 0)}
			k := c.keys(t, p, hauth)
			hctx := metadata.AppendToOutgoingContext(ctx, TokenKey, hex.EncodeToString(sess.Token))
			_, err = hostile.AdvertiseKeys(hctx, &pb.Keys{ClientId: 3, EncryptKey: k.EncryptKey, MaskKey: k.MaskKey, Certificate: k.Cert, Signature: k.Sig})
			if status.Code(err) != codes.PermissionDenied {
				t.Errorf("hostile keys: %v, want PermissionDenied", err)
			}
			out, err := srv.Wait(ctx)
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			for i, err := range errs {
				if err != nil {
					t.Errorf("honest client %d: %v", i, err)
				}
			}
			if !slices.Equal(out.Survivors, []int{0, 1, 2}) {
				t.Errorf("survivors %v, want the three honest clients", out.Survivors)
			}
		})
	}
}

// advertise is the round-0 message of client 3 signing with auth (none
// if nil).
func advertise(t *testing.T, p secagg.Params, auth *secagg.Auth) secagg.Keys {
	t.Helper()
	c, err := secagg.NewClient(p, 3, rand.Reader, auth)
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.AdvertiseKeys()
	if err != nil {
		t.Fatal(err)
	}
	return k
}
