package job

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/model"
)

// Predict's batches change nothing but memory: with a bound of three
// images' bytes (so 25 images make 9 batches, the last short) the
// predictions are those of one batch, in input order, for a network with
// a ScatterNet front end (whose features are computed per batch) and one
// without; each batch is emitted before the next is decoded.
func TestPredictBatchesGiveTheSamePredictions(t *testing.T) {
	dir := t.TempDir()
	var files []string
	rng := randsrc.Seeded(2, "predict batch images")
	for i := range 25 {
		img := image.NewGray(image.Rect(0, 0, 28, 28))
		for k := range img.Pix {
			img.Pix[k] = uint8(rng.IntN(256))
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, fmt.Sprintf("%02d.png", i))
		if err := os.WriteFile(f, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	defer func(old int) { predictBatchBytes = old }(predictBatchBytes)
	for _, spec := range []model.Spec{model.TBMNIST, model.ScatterLinearMNIST} {
		arch, err := model.NewArch(spec, 1, 28, 28, 10)
		if err != nil {
			t.Fatal(err)
		}
		net, err := model.New(arch, randsrc.Seeded(1, "predict batch net"))
		if err != nil {
			t.Fatal(err)
		}
		m := t.TempDir()
		if err := net.Save(m, model.Metadata{Input: &model.Input{Dataset: "mnist", Mean: []float64{0.1307}, Std: []float64{0.3081}}}); err != nil {
			t.Fatal(err)
		}
		predictBatchBytes = 1 << 30
		whole, err := Predict(context.Background(), m, []string{dir}, nil)
		if err != nil {
			t.Fatal(err)
		}
		per := 28*28 + 10
		if f, ok := arch.FrontEnd(); ok {
			per += f.OutSize
		}
		predictBatchBytes = 3 * 4 * per
		var got []Prediction
		decoded := 0
		err = PredictEach(context.Background(), m, []string{dir}, func(done, total int) { decoded = done }, func(p Prediction) error {
			if want := (len(got)/3 + 1) * 3; decoded != min(want, len(files)) {
				t.Errorf("%s: prediction %d emitted after %d images were decoded, want %d", spec.Name, len(got), decoded, min(want, len(files)))
			}
			got = append(got, p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(whole) != len(files) || !reflect.DeepEqual(got, whole) {
			t.Errorf("%s: %d predictions in batches of 3, %d in one, differing", spec.Name, len(got), len(whole))
		}
		for i, p := range got {
			if p.Path != files[i] {
				t.Errorf("%s: prediction %d is of %s, want %s", spec.Name, i, p.Path, files[i])
			}
		}
	}
}

// A Prediction's JSON round-trips its path, whether or not the path is
// valid UTF-8 ("path_bytes" carries the exact bytes of one that is not).
func TestPredictionJSONRoundTrip(t *testing.T) {
	for _, path := range []string{"a/b.png", "caf\u00e9.png", "bad-\xff.png", "\xed\xa0\x80.png", "quote\"<&>.png"} {
		p := Prediction{Path: path, Label: "3", Index: 3, Probabilities: []float64{0.5, 0.5}}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		var q Prediction
		if err := json.Unmarshal(b, &q); err != nil {
			t.Fatalf("%q: %v: %s", path, err, b)
		}
		if !reflect.DeepEqual(p, q) {
			t.Errorf("%q: %s reads back as %+v", path, b, q)
		}
	}
}
