package data

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// cifarRecords builds n CIFAR-10 binary records: label i%10, pixel k of record i = (i+k)%256.
func cifarRecords(n int) []byte {
	var b bytes.Buffer
	for i := 0; i < n; i++ {
		b.WriteByte(byte(i % 10))
		for k := 0; k < cifarRecord-1; k++ {
			b.WriteByte(byte(i + k))
		}
	}
	return b.Bytes()
}

func TestParseCIFAR(t *testing.T) {
	raw := cifarRecords(3)
	for _, gz := range []bool{false, true} {
		in := raw
		if gz {
			in = gzipped(raw)
		}
		x, y, err := parseCIFAR(bytes.NewReader(in), gz, 3)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(y, []uint8{0, 1, 2}) || len(x) != 3*3072 {
			t.Fatalf("labels %v, %d pixels", y, len(x))
		}
		// Record 2, channel 1 (green), row 3, column 4 is byte 1+1024+3*32+4 of the record.
		k := 1024 + 3*32 + 4
		if got, want := x[2*3072+k], float32(byte(2+k))/255; got != want {
			t.Fatalf("pixel: %v, want %v", got, want)
		}
	}
	cases := map[string]struct {
		in   []byte
		want string
	}{
		"truncated": {raw[:2*cifarRecord+100], "record 3 of 3 is incomplete"},
		"oversized": {append(append([]byte{}, raw...), 7), "oversized"},
		"bad label": {append(append([]byte{}, raw[:2*cifarRecord]...), append([]byte{10}, raw[2*cifarRecord+1:]...)...), "label 10 of record 3"},
	}
	for name, c := range cases {
		if _, _, err := parseCIFAR(bytes.NewReader(c.in), false, 3); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", name, err, c.want)
		}
	}
}

func TestLoadCIFAR10ErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := LoadCIFAR10(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Fatalf("missing directory: %v", err)
	}
	if _, _, err := LoadCIFAR10(dir); err == nil || !strings.Contains(err.Error(), "data_batch_1") {
		t.Fatalf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "data_batch_1.bin.gz")
	if err := os.WriteFile(bad, gzipped(cifarRecords(5)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadCIFAR10(dir); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("truncated file: %v", err)
	}
}

// The project's staged CIFAR-10 copy beside the checkout, when present
// (labels exact, pixels from JPEG; its SOURCE.md gives the label counts
// checked here).
func TestLoadCIFAR10Shared(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "data", "cifar10-jpeg-derived")
	if _, err := os.Stat(filepath.Join(dir, "test_batch.bin")); err != nil {
		t.Skipf("no CIFAR-10 copy at %s", dir)
	}
	train, test, err := LoadCIFAR10(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.N != 50000 || test.N != 10000 || train.C != 3 || train.H != 32 {
		t.Fatalf("sizes: %d, %d", train.N, test.N)
	}
	count := func(y []uint8) []int {
		c := make([]int, 10)
		for _, v := range y {
			c[v]++
		}
		return c
	}
	if got := fmt.Sprint(count(train.Y[:10000])); got != "[1005 974 1032 1016 999 937 1030 1001 1025 981]" {
		t.Fatalf("data_batch_1 label counts %s", got)
	}
	for k, c := range count(test.Y) {
		if c != 1000 {
			t.Fatalf("test class %d has %d images, want 1000", k, c)
		}
	}
	// Normalised with the dataset's own channel statistics: means near 0, sds near 1
	// (the JPEG round trip moves them slightly).
	plane := 32 * 32
	for c := 0; c < 3; c++ {
		var s, s2, n float64
		for i := 0; i < train.N; i += 10 {
			for _, v := range train.X[(i*3+c)*plane : (i*3+c+1)*plane] {
				s += float64(v)
				s2 += float64(v) * float64(v)
				n++
			}
		}
		mean, sd := s/n, math.Sqrt(s2/n-(s/n)*(s/n))
		if math.Abs(mean) > 0.05 || math.Abs(sd-1) > 0.05 {
			t.Fatalf("channel %d: mean %v sd %v", c, mean, sd)
		}
	}
}

func FuzzParseCIFAR(f *testing.F) {
	f.Add(cifarRecords(2), false)
	f.Add(gzipped(cifarRecords(2)), true)
	f.Add([]byte{11}, false)
	f.Fuzz(func(t *testing.T, b []byte, gz bool) {
		x, y, err := parseCIFAR(bytes.NewReader(b), gz, 2)
		if err == nil && (len(x) != 2*3072 || len(y) != 2) {
			t.Fatalf("%d pixels, %d labels", len(x), len(y))
		}
	})
}
