package federated

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/stats"
)

// Traffic is what the clients sent the server, counted as gRPC payload
// bytes on the wire (one connection per client). It depends only on public
// sizes: the masked vectors are uniform words whatever the votes.
type Traffic struct {
	MaxSent   int64 `json:"max_per_client"`
	TotalSent int64 `json:"total"`
}

// trafficMeter is a gRPC server stats.Handler that counts the payload bytes
// each connection sends the server.
type trafficMeter struct {
	mu    sync.Mutex
	conns []*atomic.Int64
}

type connKey struct{}

func (m *trafficMeter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	c := new(atomic.Int64)
	m.mu.Lock()
	m.conns = append(m.conns, c)
	m.mu.Unlock()
	return context.WithValue(ctx, connKey{}, c)
}

func (m *trafficMeter) HandleConn(context.Context, stats.ConnStats) {}

func (m *trafficMeter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (m *trafficMeter) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if p, ok := s.(*stats.InPayload); ok {
		if c, ok := ctx.Value(connKey{}).(*atomic.Int64); ok {
			c.Add(int64(p.WireLength))
		}
	}
}

func (m *trafficMeter) traffic() Traffic {
	m.mu.Lock()
	defer m.mu.Unlock()
	var t Traffic
	for _, c := range m.conns {
		n := c.Load()
		t.TotalSent += n
		t.MaxSent = max(t.MaxSent, n)
	}
	return t
}
