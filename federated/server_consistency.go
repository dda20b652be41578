package federated

import (
	"context"
	"fmt"

	"github.com/dptune/dptune/federated/secagg"
	pb "github.com/dptune/dptune/federated/votepb"
)

// ConsistencyCheck implements pb.VoteServer (round 3 of secure sum k,
// Bonawitz et al. 2017, Figure 4): it collects each survivor's signature
// on the U3 it was sent and, when every live client has signed, returns
// U4's signatures, at least t of them, to each signer. The server only
// relays: every client checks the signatures itself before it reveals a
// share (secagg.Client.Unmask).
func (s *Server) ConsistencyCheck(ctx context.Context, m *pb.U3Signature) (*pb.U3Signatures, error) {
	if err := s.authorize(ctx, int(m.ClientId)); err != nil {
		return nil, err
	}
	id, k := int(m.ClientId), int(m.Sum)
	st, err := s.started(k)
	if err != nil {
		return nil, err
	}
	err = s.submit(ctx, sumPhase("consistency", k), id, func() error {
		return st.agg.AddSignature(secagg.Signature{From: id, Sig: m.Signature})
	}, func() (err error) {
		if st.u4, err = st.agg.CloseSignatures(); err != nil {
			return fmt.Errorf("%w: %v", ErrAborted, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := &pb.U3Signatures{}
	for _, sg := range st.u4 {
		out.Signatures = append(out.Signatures, &pb.U3Signature{ClientId: int32(sg.From), Signature: sg.Sig, Sum: m.Sum})
	}
	return out, nil
}
