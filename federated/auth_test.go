package federated

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/federated/pki"
	"github.com/dptune/dptune/federated/secagg"
	pb "github.com/dptune/dptune/federated/votepb"
)

// mtls serves srv over mutual TLS on a loopback TCP port (certificates
// for n clients in a fresh CA) and returns a function that dials it as
// client i (1 … n, the holder of client-i.pem, client ID i−1), with that
// client's Auth.
func mtls(t *testing.T, srv *Server, n int) func(i int) (*grpc.ClientConn, *secagg.Auth) {
	t.Helper()
	dir := t.TempDir()
	if err := pki.Generate(dir, n, nil, false); err != nil {
		t.Fatal(err)
	}
	cfg, err := pki.ServerTLS(filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), filepath.Join(dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.RequireClientCert = true
	g := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)))
	pb.RegisterVoteServer(g, srv)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return func(i int) (*grpc.ClientConn, *secagg.Auth) {
		c, err := pki.ClientTLS(filepath.Join(dir, fmt.Sprintf("client-%d.pem", i)), filepath.Join(dir, fmt.Sprintf("client-%d.key", i)), filepath.Join(dir, "ca.pem"))
		if err != nil {
			t.Fatal(err)
		}
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(credentials.NewTLS(c.TLS)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn, &secagg.Auth{Cert: c.Cert, Key: c.Key, Roots: c.Roots}
	}
}

func wantDenied(t *testing.T, what string, err error) {
	t.Helper()
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("%s: %v, want PermissionDenied", what, err)
	}
}

// TestSpoofedIDsRefusedOverMTLS: over real gRPC with mutual TLS, three
// honest clients run the vote (the actively secure secure sum) while a
// fourth certificate holder, client ID 3, which never joins, sends round-0
// keys in client 0's name and in its own, and asks to join as part 1 (client
// 0); and client 1's connection sends a message in client 0's name. Every
// one is refused with PermissionDenied, and the honest session completes
// with all three votes.
func TestSpoofedIDsRefusedOverMTLS(t *testing.T) {
	job := toyJob(t, 3, 0)
	srv, err := NewServer(job)
	if err != nil {
		t.Fatal(err)
	}
	dial := mtls(t, srv, 4) // client-4.pem binds ID 3, outside the job's 3 clients
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	intruder, _ := dial(4)
	ic := pb.NewVoteClient(intruder)
	keys := &pb.Keys{ClientId: 0, EncryptKey: make([]byte, 32), MaskKey: make([]byte, 32)}
	_, err = ic.AdvertiseKeys(ctx, keys)
	wantDenied(t, "keys in client 0's name from client 3's certificate", err)
	_, err = ic.AdvertiseKeys(ctx, &pb.Keys{ClientId: 3, EncryptKey: make([]byte, 32), MaskKey: make([]byte, 32)})
	wantDenied(t, "keys from client 3, which never joined", err)
	if stream, err := ic.Join(ctx, &pb.JoinRequest{Part: 1}); err == nil {
		_, err = stream.Recv()
		wantDenied(t, "joining as part 1 with client 3's certificate", err)
	}

	d := toyData(job.NominalN)
	var wg sync.WaitGroup
	reports := make([]ClientReport, 3)
	errs := make([]error, 3)
	for i := range 3 {
		conn, auth := dial(i + 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			seed := uint64(100 + i)
			c := &Client{Load: func(Job) (*data.Dataset, error) { return d, nil }, Seed: &seed, Part: i + 1, Parts: 3, Auth: auth}
			reports[i], errs[i] = c.Run(ctx, pb.NewVoteClient(conn))
		}()
	}
	// Client 2's connection (certificate of client ID 1) speaks for
	// client 0, with or without a token.
	conn1, _ := dial(2)
	_, err = pb.NewVoteClient(conn1).AdvertiseKeys(ctx, keys)
	wantDenied(t, "keys in client 0's name over client 1's connection", err)
	_, err = pb.NewVoteClient(conn1).ConsistencyCheck(metadata.AppendToOutgoingContext(ctx, TokenKey, hex.EncodeToString(make([]byte, 32))),
		&pb.U3Signature{ClientId: 0})
	wantDenied(t, "a signature in client 0's name over client 1's connection", err)

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
	if len(out.Survivors) != 3 || out.Answered != 3 || out.Winner != 1 {
		t.Errorf("outcome %+v, want all three clients' votes and candidate 1", out)
	}
}

// TestUnjoinedSenderRefusedInsecure: on an unauthenticated (loopback)
// connection a process that never joined sends round-0 keys in the name of
// a client that did; without that client's Join token it is refused, and
// the session completes.
func TestUnjoinedSenderRefusedInsecure(t *testing.T) {
	job := toyJob(t, 3, 0)
	srv, err := NewServer(job)
	if err != nil {
		t.Fatal(err)
	}
	dial := serveInMemory(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := toyData(job.NominalN)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	joined := make(chan struct{})
	var once sync.Once
	for i := range 3 {
		conn := dial()
		wg.Add(1)
		go func() {
			defer wg.Done()
			seed := uint64(100 + i)
			c := &Client{Load: func(Job) (*data.Dataset, error) { return d, nil }, Seed: &seed, Part: i + 1, Parts: 3}
			if i == 0 {
				c.Progress = func(stage string, done, total int) { once.Do(func() { close(joined) }) }
			}
			_, errs[i] = c.Run(ctx, pb.NewVoteClient(conn))
		}()
	}
	<-joined // client 0 has joined and is past round 0's keys
	spoof := pb.NewVoteClient(dial())
	for _, tok := range []string{"", hex.EncodeToString(make([]byte, 32))} {
		_, err := spoof.AdvertiseKeys(metadata.AppendToOutgoingContext(ctx, TokenKey, tok),
			&pb.Keys{ClientId: 0, EncryptKey: make([]byte, 32), MaskKey: make([]byte, 32)})
		wantDenied(t, fmt.Sprintf("keys in client 0's name with token %q", tok), err)
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
	if len(out.Survivors) != 3 {
		t.Errorf("outcome %+v, want all three clients' votes", out)
	}
}
