package job

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// Audits whose trials cannot run, or whose claims would integrate for
// seconds, are refused with ErrInvalid before any trial and at once: a
// score noise above the discrete Gaussian sampler's maximum, a clipping
// norm or sampling rate that overflows the float32 parameters, a fixed or
// binary number of runs above tuning.MaxRuns.
func TestAuditRangesRefusedUpFront(t *testing.T) {
	canary := func(c, tau float64) AuditSpec {
		return AuditSpec{Protocol: AuditDPSGD, NoiseMultiplier: 1, SamplingRate: tau, ClipNorm: c, Steps: 1}
	}
	for _, tc := range []struct {
		s    AuditSpec
		want string
	}{
		{AuditSpec{Protocol: AuditScore, ScoreNoise: 1e300}, "score noise 1e+300 is outside (0, 1e+09]"},
		{canary(1e300, 1), "clipping norm 1e+300 is outside (0, 1e+06]"},
		{canary(1, 1e-300), "sampling rate 1e-300 is outside [1e-12, 1]"},
		{AuditSpec{Protocol: AuditReduced, Mu: 1, Repetitions: accounting.FixedRepetitions(tuning.MaxRuns + 1)}, "1048577 runs is above 1048576"},
		{AuditSpec{Protocol: AuditTuner, NoiseMultiplier: 1, SamplingRate: 1, ClipNorm: 1, Steps: 1, Repetitions: accounting.BinaryRepetitions(1<<30, 0.5)}, "1073741824 runs is above 1048576"},
	} {
		s := tc.s
		s.Trials, s.Seed, s.Delta = 10, 1, 1e-5
		s.CSV = filepath.Join(t.TempDir(), "trials.csv")
		played := false
		s.Progress = func(done, _ int) { played = played || done > 0 }
		start := time.Now()
		_, err := Audit(context.Background(), s)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) || played {
			t.Errorf("%s: %v (trials played: %v); want ErrInvalid with %q before any trial", s.Protocol, err, played, tc.want)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: refused only after %v", s.Protocol, d)
		}
	}
}
