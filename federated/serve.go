package federated

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	pb "github.com/dptune/dptune/federated/votepb"
)

// Serve serves srv on lis over t until the protocol ends (srv.Wait) or ctx
// does, and returns the outcome, what the clients sent over the session
// (Traffic), and Wait's error (ErrAborted for a round that
// released nothing, or ctx's).
//
// Before serving it checks t for lis's address (Transport.CheckServer; the
// error wraps ErrTransport and nothing is served) and, over mutual TLS,
// sets srv.RequireClientCert, so that a client's ID is the one its
// certificate binds. srv's deadlines, JoinTimeout and Progress are the
// caller's to set before.
//
// Trust: the clients need not trust the server that runs Serve — it may
// be malicious and collude with up to Job.Colluding clients over mutual
// TLS, and learns no more than the noisy sum (see the package comment,
// "Adversaries"); with t.Insecure (loopback only) it is trusted to be
// semi-honest. The curator, who reads the returned Outcome, trusts it.
//
// Serve closes lis and returns within about six seconds of the protocol's
// end or ctx's, whatever the connections to lis do: a connection that
// never sent a byte is closed at once, and the calls in flight (the last
// round's outcome on its way to the clients) get five seconds to finish.
// A connection that has not finished its handshake within 10 s is dropped,
// so idle unauthenticated connections do not accumulate; messages are
// limited to 64 MiB.
func Serve(ctx context.Context, srv *Server, lis net.Listener, t Transport) (Outcome, Traffic, error) {
	creds, mtls, err := t.serverOption(lis.Addr().String())
	if err != nil {
		return Outcome{}, Traffic{}, err
	}
	srv.RequireClientCert = mtls
	var meter trafficMeter
	// ConnectionTimeout drops a connection that has not finished its
	// handshake within 10 s (gRPC's default is 120 s).
	g := grpc.NewServer(creds, grpc.ConnectionTimeout(10*time.Second), grpc.MaxRecvMsgSize(64<<20), grpc.MaxSendMsgSize(64<<20), grpc.StatsHandler(&meter))
	pb.RegisterVoteServer(g, srv)
	tl := trackListener(lis)
	go g.Serve(tl)
	out, err := srv.Wait(ctx)
	stopServer(g, tl, 5*time.Second)
	return out, meter.traffic(), err
}

// trackedListener remembers the connections it accepted, so that Serve
// can end them at shutdown: gRPC's Stop and GracefulStop both wait for
// connections still in their handshake, and a peer that connects and
// never speaks would hold them for the handshake timeout (two minutes).
type trackedListener struct {
	net.Listener
	mu     sync.Mutex
	conns  map[*trackedConn]struct{}
	closed bool
}

func trackListener(l net.Listener) *trackedListener {
	return &trackedListener{Listener: l, conns: map[*trackedConn]struct{}{}}
}

// trackedConn is an accepted connection that knows whether its peer has
// sent anything.
type trackedConn struct {
	net.Conn
	l     *trackedListener
	spoke atomic.Bool
}

func (l *trackedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	t := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		c.Close()
		return nil, net.ErrClosed
	}
	l.conns[t] = struct{}{}
	return t, nil
}

func (c *trackedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.spoke.Store(true)
	}
	return n, err
}

func (c *trackedConn) Close() error {
	c.l.mu.Lock()
	delete(c.l.conns, c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// shut closes the listener and the accepted connections: those whose peer
// never sent a byte, or with all, every one.
func (l *trackedListener) shut(all bool) {
	l.mu.Lock()
	l.closed = true
	var end []*trackedConn
	for c := range l.conns {
		if all || !c.spoke.Load() {
			end = append(end, c)
		}
	}
	l.mu.Unlock()
	l.Listener.Close()
	for _, c := range end {
		c.Close()
	}
}

// stopServer stops g, which serves on l, within about wait: silent
// connections are closed at once (they hold no call), the calls in flight
// — the last round's outcome on its way to the clients — get up to wait to
// finish, then every connection is closed and g stopped, without waiting
// for it further than a second.
func stopServer(g *grpc.Server, l *trackedListener, wait time.Duration) {
	l.shut(false)
	done := make(chan struct{})
	go func() {
		g.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	l.shut(true)
	go g.Stop()
	select {
	case <-done:
	case <-time.After(time.Second):
	}
}
