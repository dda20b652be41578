package federated

import (
	"context"

	"google.golang.org/grpc"

	"github.com/dptune/dptune/federated/secagg"
	pb "github.com/dptune/dptune/federated/votepb"
)

// Conn is a client's connection to a vote server (Dial).
type Conn struct {
	cc   *grpc.ClientConn
	auth *secagg.Auth
	id   int
}

// Dial returns a connection to the vote server at addr (HOST:PORT) over t.
// It reads t's files and checks them (Transport.CheckClient without a
// part; such errors wrap ErrTransport) but does not connect: the first
// call does (Conn.Run). Other errors are gRPC's for an unusable address.
// Messages are limited to 64 MiB.
//
// Trust: the client does not trust the server it dials. Over mutual TLS
// it authenticates the server by the curator's CA, and its certificate's
// key signs its secure-sum messages, so that a malicious server colluding
// with up to Job.Colluding clients learns no more than the noisy sum; the
// job the server sends is checked against the client's own Limits
// (Client.Limits) before any data is read. Over t.Insecure (loopback
// only) the secure sums are unauthenticated and withstand a semi-honest
// server only.
func Dial(addr string, t Transport) (*Conn, error) {
	creds, auth, id, err := t.clientOption(addr)
	if err != nil {
		return nil, err
	}
	cc, err := grpc.NewClient(addr, creds, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<20), grpc.MaxCallSendMsgSize(64<<20)))
	if err != nil {
		return nil, err
	}
	return &Conn{cc: cc, auth: auth, id: id}, nil
}

// ID is the client ID the transport's certificate binds (0 … n−1; part
// ID+1 of the split), or −1 without TLS.
func (c *Conn) ID() int { return c.id }

// Run takes part in the server's protocol as cl (Client.Run, with its
// errors), with the transport's certificate and key as cl.Auth over TLS
// (the actively secure secure sums) and none without.
func (c *Conn) Run(ctx context.Context, cl *Client) (ClientReport, error) {
	cl.Auth = c.auth
	return cl.Run(ctx, pb.NewVoteClient(c.cc))
}

// Close closes the connection.
func (c *Conn) Close() error { return c.cc.Close() }
