package job

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
)

// trackedListener remembers the connections it accepted, so that the vote
// server can end them at shutdown: gRPC's Stop and GracefulStop both wait
// for connections still in their handshake, and a peer that connects and
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

// stopVoteServer stops g, which serves on l, within about wait: silent
// connections are closed at once (they hold no call), the calls in flight
// — the last round's outcome on its way to the clients — get up to wait to
// finish, then every connection is closed and g stopped, without waiting
// for it further than a second.
func stopVoteServer(g *grpc.Server, l *trackedListener, wait time.Duration) {
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
