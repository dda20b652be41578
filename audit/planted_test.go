//go:build dptune_plant_quarter_noise || dptune_plant_no_clip

package audit

import (
	"testing"

	"github.com/dptune/dptune/dpsgd"
)

// Built with a planted bug in dpsgd (tag dptune_plant_quarter_noise: noise
// of σ/4 where the ledger records σ; dptune_plant_no_clip: no clipping, so
// the canary's gradient of norm CanaryGradientNorm·C counts in full), the
// tight DP-SGD audit must find ε_L above the claimed ε = 2, under flat and
// automatic clipping alike. `make test` runs it once per tag.
func TestPlantedBugCaught(t *testing.T) {
	for _, c := range []struct {
		clipping dpsgd.Clipping
		gamma    float64
	}{{dpsgd.FlatClipping, 0}, {dpsgd.AutomaticClipping, dpsgd.DefaultAutoClipGamma}} {
		lower, claim := tightAuditClipped(t, 2, 1, c.clipping, c.gamma)
		if lower <= claim {
			t.Errorf("%v clipping: planted bug not caught: ε_L %.3f ≤ claimed ε %.3f", c.clipping, lower, claim)
		}
	}
}
