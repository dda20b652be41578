package scatter

import (
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"testing"
)

// kymatioCase is one input and kymatio's Scattering2D output for it,
// written by testdata/gen_kymatio_ref.py.
type kymatioCase struct {
	Name  string    `json:"name"`
	H     int       `json:"h"`
	W     int       `json:"w"`
	J     int       `json:"J"`
	L     int       `json:"L"`
	Shape []int     `json:"shape"`
	Img   []float32 `json:"img"`
	Out   []float32 `json:"out"`
}

func loadKymatio(t *testing.T) []kymatioCase {
	t.Helper()
	f, err := os.Open("testdata/kymatio_ref.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []kymatioCase `json:"cases"`
	}
	if err := json.NewDecoder(zr).Decode(&ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Cases) == 0 {
		t.Fatal("no reference cases")
	}
	return ref.Cases
}

// TestMatchesKymatio compares Transform with kymatio's Scattering2D (numpy
// frontend, float32 input) on two MNIST test images and on random images of
// other sizes, J and L: the relative error ‖ours − kymatio‖/‖kymatio‖ over
// all coefficients, and over each channel, must be below 1e-5 (kymatio
// computes in single precision, Transform in double).
func TestMatchesKymatio(t *testing.T) {
	for _, c := range loadKymatio(t) {
		t.Run(c.Name, func(t *testing.T) {
			s, err := New(c.H, c.W, c.J, c.L)
			if err != nil {
				t.Fatal(err)
			}
			k, oh, ow := s.OutShape()
			if len(c.Shape) != 3 || c.Shape[0] != k || c.Shape[1] != oh || c.Shape[2] != ow {
				t.Fatalf("OutShape = %d, %d, %d; kymatio gives %v", k, oh, ow, c.Shape)
			}
			dst := make([]float32, k*oh*ow)
			if err := s.Transform(dst, c.Img); err != nil {
				t.Fatal(err)
			}
			if e := relErr(dst, c.Out); e > 1e-5 {
				t.Errorf("relative error %.3g over all channels", e)
			}
			plane := oh * ow
			worst, wc := 0.0, 0
			for ch := 0; ch < k; ch++ {
				e := relErr(dst[ch*plane:(ch+1)*plane], c.Out[ch*plane:(ch+1)*plane])
				if e > worst {
					worst, wc = e, ch
				}
			}
			if worst > 1e-5 {
				t.Errorf("channel %d: relative error %.3g", wc, worst)
			}
			t.Logf("worst channel relative error %.3g (channel %d)", worst, wc)
		})
	}
}

// relErr returns ‖a − b‖₂ / ‖b‖₂.
func relErr(a, b []float32) float64 {
	var num, den float64
	for i := range b {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / den)
}
