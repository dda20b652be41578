package federated

import (
	"fmt"
	"strings"
	"time"
)

// Default round deadlines of the command-line server (Server.TrainingTimeout
// and Server.MessageTimeout). Rounds in which the clients train locally
// take minutes — ten MNIST clients on one 2-core machine score the 24
// candidates in under two, and CIFAR-10's larger network takes many times
// that — and a client that runs out of time abstains (Job.LocalTimeout),
// so the deadline is generous; the other rounds are protocol messages that
// take milliseconds.
const (
	DefaultTrainingTimeout = time.Hour
	DefaultMessageTimeout  = time.Minute
)

// phases are the names of the job's rounds in the order the clients go
// through them: the vote's secure sum (rounds 0 to 4, the consistency
// check before the unmasking), then every FedAvg
// round (a secure sum each with FinalDPFedAvg, a plain Update otherwise).
func (j Job) phases() []string {
	var out []string
	sum := func(k int) {
		for _, r := range []string{"keys", "shares", "masked", "consistency", "unmask"} {
			out = append(out, sumPhase(r, k))
		}
	}
	sum(0)
	for r := range j.Final.Rounds {
		if j.Final.Mode == FinalDPFedAvg {
			sum(r + 1)
		} else {
			out = append(out, fmt.Sprintf("round-%d", r))
		}
	}
	return out
}

// training reports whether the clients work locally before sending the
// named round's message: round 0 of the vote's sum (each client loads its
// data first), its round 2 (the candidates' local training), a plain
// FedAvg round, and round 0 of a FedAvg round's sum (the local training of
// the winner comes before it).
func training(name string) bool {
	return name == sumPhase("keys", 0) || name == sumPhase("masked", 0) || strings.HasPrefix(name, "round-") ||
		strings.HasPrefix(name, "keys/")
}

// timeout is the deadline of the named round.
func (s *Server) timeout(name string) time.Duration {
	if training(name) {
		return s.TrainingTimeout
	}
	return s.MessageTimeout
}

// expire ends the named round at its deadline: every live client that has
// not sent its message is dropped (and its session ended), which closes the
// round with the others — or aborts it, if too few remain for the round's
// release. A round nobody answered aborts the run.
func (s *Server) expire(p *phase, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-p.closed:
		return
	default:
	}
	for id := range s.live {
		if !p.got[id] {
			s.dropLocked(id)
			if k, ok := s.kicked[id]; ok {
				close(k)
				delete(s.kicked, id)
			}
		}
	}
	// Admissions end too: a client that has not joined by now is a dropout.
	s.closed = true
	for _, q := range s.phases {
		s.tryClose(q)
	}
	select {
	case <-p.closed:
	default:
		p.err = fmt.Errorf("%w: no client sent its message of round %s before the deadline", ErrAborted, name)
		close(p.closed)
		if s.err == nil {
			s.err = p.err
			close(s.failed)
		}
	}
}
