package federated

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/federated/pki"
)

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7070": true, "[::1]:7070": true, "localhost:7070": true, "127.1.2.3:1": true,
		"0.0.0.0:7070": false, ":7070": false, "10.1.2.3:7070": false, "example.org:7070": false, "127.0.0.1": false,
	} {
		if got := IsLoopback(addr); got != want {
			t.Errorf("IsLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// TestTransportRefusals: plaintext off loopback, a TLS transport without
// its files or with unreadable ones, and a client certificate for another
// part are refused before any connection, with errors wrapping
// ErrTransport; Serve serves nothing on such a transport.
func TestTransportRefusals(t *testing.T) {
	dir := t.TempDir()
	if err := pki.Generate(dir, 2, nil, false); err != nil {
		t.Fatal(err)
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	server := []struct {
		addr string
		tr   Transport
	}{
		{"0.0.0.0:7070", Transport{Insecure: true}},
		{":7070", Transport{Insecure: true}},
		{"127.0.0.1:0", Transport{}},
		{"127.0.0.1:0", Transport{Cert: f("missing.pem"), Key: f("server.key"), CA: f("ca.pem")}},
	}
	for _, c := range server {
		if err := c.tr.CheckServer(c.addr); !errors.Is(err, ErrTransport) {
			t.Errorf("CheckServer(%s) over %+v: %v, want ErrTransport", c.addr, c.tr, err)
		}
	}
	client := []struct {
		part int
		tr   Transport
	}{
		{0, Transport{}},
		{0, Transport{Cert: f("server.pem"), Key: f("server.key"), CA: f("ca.pem")}}, // binds no client ID
		{2, Transport{Cert: f("client-1.pem"), Key: f("client-1.key"), CA: f("ca.pem")}},
	}
	for _, c := range client {
		if err := c.tr.CheckClient("127.0.0.1:1", c.part); !errors.Is(err, ErrTransport) {
			t.Errorf("CheckClient(part %d) over %+v: %v, want ErrTransport", c.part, c.tr, err)
		}
	}
	if _, err := Dial("10.1.2.3:7070", Transport{Insecure: true}); !errors.Is(err, ErrTransport) {
		t.Errorf("Dial off loopback, insecure: %v, want ErrTransport", err)
	}
	srv, err := NewServer(toyJob(t, 2, 0))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	if _, _, err := Serve(context.Background(), srv, lis, Transport{}); !errors.Is(err, ErrTransport) {
		t.Errorf("Serve without certificates: %v, want ErrTransport", err)
	}
}

// TestServeAndDialOverMutualTLS: a whole vote through Serve and Dial over
// mutual TLS with certificates from one CA: each client's ID is the one
// its certificate binds, every vote is in the sum, the clients' traffic is
// counted, and Serve returns once the protocol has ended.
func TestServeAndDialOverMutualTLS(t *testing.T) {
	const n = 3
	dir := t.TempDir()
	if err := GenerateCerts(dir, n, nil, false); err != nil {
		t.Fatal(err)
	}
	f := func(name string) string { return filepath.Join(dir, name) }
	job := toyJob(t, n, 0)
	srv, err := NewServer(job)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	d := toyData(job.NominalN)
	var wg sync.WaitGroup
	reports := make([]ClientReport, n)
	errs := make([]error, n)
	ids := make([]int, n)
	for i := range n {
		tr := Transport{Cert: f(fmt.Sprintf("client-%d.pem", i+1)), Key: f(fmt.Sprintf("client-%d.key", i+1)), CA: f("ca.pem")}
		conn, err := Dial(addr, tr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		ids[i] = conn.ID()
		wg.Add(1)
		go func() {
			defer wg.Done()
			seed := uint64(100 + i)
			c := &Client{Load: func(Job) (*data.Dataset, error) { return d, nil }, Seed: &seed, Part: conn.ID() + 1}
			reports[i], errs[i] = conn.Run(context.Background(), c)
			if c.Auth == nil {
				errs[i] = errors.Join(errs[i], errors.New("Run over TLS left Client.Auth unset"))
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, traffic, err := Serve(ctx, srv, lis, Transport{Cert: f("server.pem"), Key: f("server.key"), CA: f("ca.pem")})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !srv.RequireClientCert {
		t.Error("Serve over mutual TLS left RequireClientCert unset")
	}
	if !slices.Equal(ids, []int{0, 1, 2}) {
		t.Errorf("certificate IDs %v, want [0 1 2]", ids)
	}
	if !slices.Equal(out.Survivors, []int{0, 1, 2}) {
		t.Errorf("survivors %v, want all three", out.Survivors)
	}
	for i, r := range reports {
		if errs[i] != nil || r.ID != i || r.Winner != out.Winner {
			t.Errorf("client %d: %+v, %v; want ID %d, winner %d", i, r, errs[i], i, out.Winner)
		}
	}
	if traffic.MaxSent <= 0 || traffic.TotalSent < n*traffic.MaxSent/2 {
		t.Errorf("traffic %+v", traffic)
	}
}
