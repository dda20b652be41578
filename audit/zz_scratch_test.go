package audit

import (
	"math"
	"testing"

	"github.com/dptune/dptune/dpsgd/accounting"
	"gonum.org/v1/gonum/stat/distuv"
)

func TestScratch(t *testing.T) {
	for _, mu := range []float64{0.5, 1, 2} {
		n := 50000
		best, bth := 0.0, 0.0
		for th := -8.0; th < 10; th += 0.001 {
			fp := int(math.Round(float64(n) * (1 - distuv.UnitNormal.CDF(th))))
			fn := int(math.Round(float64(n) * distuv.UnitNormal.CDF(th-mu)))
			e, _, _, _ := eq4Upper(fp, n, fn, n, 1e-5, 0.95)
			if e > best {
				best, bth = e, th
			}
		}
		t.Logf("mu=%v ideal=%.4f at th=%.3f exact=%.4f", mu, best, bth, accounting.GDPEpsilon(mu, 1e-5))
	}
}
