package bench

import (
	"strings"
	"testing"

	"github.com/dptune/dptune/job"
)

// DP-Hype's table is not run under a comparison-wide option, and says why.
func TestCompareVoteNotRun(t *testing.T) {
	if why := (CompareRequest{Clipping: job.ClippingSettings{Rule: "flat"}}).VoteNotRun(); why != "" {
		t.Errorf("plain: %q", why)
	}
	for _, r := range []CompareRequest{{Clipping: job.ClippingSettings{Rule: "automatic"}}, {IncludeDefault: true}, {SelectionShare: 0.25}, {SelectionShare: 0.25, Subsample: 0.5}} {
		if why := r.VoteNotRun(); !strings.HasPrefix(why, "the vote tuner takes none of --") {
			t.Errorf("%+v: %q", r, why)
		}
	}
}
