package vote

import "fmt"

// closedLocked reports whether the named phase exists and has closed.
func (s *Server) closedLocked(name string) bool {
	p, ok := s.phases[name]
	if !ok {
		return false
	}
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

// currentRoundLocked is the plain FedAvg round now open: the first whose
// phase has not closed, once the vote's unmasking has closed; −1 before
// that, Final.Rounds after the last. An update is accepted for this round
// only, so a client cannot pre-load a later round or reopen an earlier one.
func (s *Server) currentRoundLocked() int {
	if !s.closedLocked(sumPhase("unmask", 0)) {
		return -1
	}
	for r := range s.job.Final.Rounds {
		if !s.closedLocked(fmt.Sprintf("round-%d", r)) {
			return r
		}
	}
	return s.job.Final.Rounds
}
