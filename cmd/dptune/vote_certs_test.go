package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/federated/pki"
)

// TestVoteCertsLoadAndVerify: dptune vote certs writes a CA whose server
// certificate verifies for localhost, 127.0.0.1 and every --host (and not
// for another name), client certificates that load with their keys, chain
// to the CA and bind client IDs 0 … n−1, keys only the owner can read, and
// refuses to overwrite a CA.
func TestVoteCertsLoadAndVerify(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	if code, out := run(t, "vote", "certs", "--out", dir, "--clients", "3", "--host", "vote.example.org", "--host", "10.1.2.3"); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	ca := filepath.Join(dir, "ca.pem")
	if _, err := pki.ServerTLS(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), ca); err != nil {
		t.Fatal(err)
	}
	roots, err := pki.LoadCA(ca)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "server.pem"))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatal("server.pem holds no PEM block")
	}
	srv, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"localhost", "127.0.0.1", "::1", "vote.example.org", "10.1.2.3"} {
		if _, err := srv.Verify(x509.VerifyOptions{Roots: roots, DNSName: host}); err != nil {
			t.Errorf("server certificate for %s: %v", host, err)
		}
	}
	if _, err := srv.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.example.org"}); err == nil {
		t.Error("the server certificate verifies for a name it was not issued for")
	}
	if _, _, err := pki.VerifyClient(roots, blk.Bytes); err == nil {
		t.Error("the server certificate passes as a client certificate")
	}
	for i := 1; i <= 3; i++ {
		c, err := pki.ClientTLS(filepath.Join(dir, fmt.Sprintf("client-%d.pem", i)), filepath.Join(dir, fmt.Sprintf("client-%d.key", i)), ca)
		if err != nil {
			t.Fatal(err)
		}
		if c.ID != i-1 {
			t.Errorf("client-%d.pem binds client %d, want %d", i, c.ID, i-1)
		}
		st, err := os.Stat(filepath.Join(dir, fmt.Sprintf("client-%d.key", i)))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("client-%d.key: mode %v, %v; want 0600", i, st.Mode().Perm(), err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "ca.key")); err != nil {
		t.Errorf("ca.key: %v", err)
	}
	if code, out := run(t, "vote", "certs", "--out", dir, "--clients", "3"); code != 2 || !strings.Contains(out, "already holds ca.pem") {
		t.Errorf("certs over an existing CA: exit %d, %s", code, out)
	}
}

// TestVoteTransportRefusals: plaintext off loopback, a missing or unusable
// certificate, a client certificate for another part, and a dropout that
// leaves fewer than t = max(⌊(n+c)/2⌋+1, 2) survivors are each refused
// with one line and status 2 before any work.
func TestVoteTransportRefusals(t *testing.T) {
	dir := t.TempDir()
	if err := pki.Generate(dir, 3, nil, false); err != nil {
		t.Fatal(err)
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	cases := [][]string{
		{"vote", "serve", "--insecure", "--listen", "0.0.0.0:7070"},
		{"vote", "serve", "--insecure", "--listen", ":7070"},
		{"vote", "serve", "--listen", "127.0.0.1:0"},
		{"vote", "serve", "--tls-cert", f("missing.pem"), "--tls-key", f("server.key"), "--ca", f("ca.pem")},
		{"vote", "serve", "--tls-cert", f("client-1.pem"), "--tls-key", f("server.key"), "--ca", f("ca.pem")},
		{"vote", "serve", "--insecure", "--clients", "4", "--dropout", "0.5"},
		{"vote", "serve", "--insecure", "--clients", "10", "--dropout", "0.3", "--colluding", "4"},
		{"vote", "serve", "--insecure", "--colluding", "-1"},
		{"tune", "--tuner", "vote", "--clients", "4", "--dropout", "0.5"},
		{"vote", "client", "--server", "10.1.2.3:7070", "--insecure"},
		{"vote", "client", "--server", "127.0.0.1:1"},
		{"vote", "client", "--server", "127.0.0.1:1", "--tls-cert", f("server.pem"), "--tls-key", f("server.key"), "--ca", f("ca.pem")},
		{"vote", "client", "--server", "127.0.0.1:1", "--part", "2/3", "--tls-cert", f("client-1.pem"), "--tls-key", f("client-1.key"), "--ca", f("ca.pem")},
		{"vote", "certs"},
		{"vote", "certs", "--out", filepath.Join(dir, "x"), "--clients", "1"},
		{"vote", "client", "--server", "127.0.0.1:1", "--insecure", "--max-epsilon", "0"},
		{"vote", "client", "--server", "127.0.0.1:1", "--insecure", "--max-delta", "1"},
		{"vote", "client", "--server", "127.0.0.1:1", "--insecure", "--colluding", "-1"},
	}
	for _, args := range cases {
		expectExit2(t, 2*time.Second, "", args...)
	}
}

// TestVoteCertsKeyFiles: vote certs refuses a directory that holds one of
// its files (here only server.key, mode 0644) unless --force, which
// replaces it with a key of mode 0600; a symbolic link in place of a key
// is refused even with --force, and its target is left alone.
func TestVoteCertsKeyFiles(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "server.key")
	if err := os.WriteFile(key, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out := run(t, "vote", "certs", "--out", dir, "--clients", "2"); code != 2 || !strings.Contains(out, "already holds server.key") {
		t.Errorf("certs over server.key: exit %d, %s", code, out)
	}
	if code, out := run(t, "vote", "certs", "--out", dir, "--clients", "2", "--force"); code != 0 {
		t.Fatalf("--force: exit %d, %s", code, out)
	}
	if st, err := os.Stat(key); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("server.key after --force: %v, %v; want mode 0600", st.Mode().Perm(), err)
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "client-1.key")
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if code, _ := run(t, "vote", "certs", "--out", dir, "--clients", "2", "--force"); code == 0 {
		t.Error("certs wrote through a symbolic link")
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep" {
		t.Errorf("the link's target now holds %q (%v)", b, err)
	}
}
