package data

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
)

// CIFAR-10's per-channel normalisation constants (R, G, B): the mean and
// standard deviation of the 50,000 training images scaled to [0, 1], as
// published with the dataset's common training recipes (e.g. torchvision's
// and Opacus's CIFAR-10 examples use these means; the standard deviations are
// the dataset's true per-channel ones).
var (
	CIFAR10Mean = []float64{0.4914, 0.4822, 0.4465}
	CIFAR10Std  = []float64{0.2470, 0.2435, 0.2616}
)

// The CIFAR-10 binary format (Krizhevsky 2009, "cifar-10-batches-bin"): each
// file holds 10,000 records of 1 label byte followed by 3,072 pixel bytes,
// 1,024 red then 1,024 green then 1,024 blue, each plane 32×32 row-major.
const (
	cifarSide         = 32
	cifarRecord       = 1 + 3*cifarSide*cifarSide
	cifarPerFile      = 10000
	cifarTrainBatches = 5
)

// CIFAR-10 (Krizhevsky 2009): 50,000 training and 10,000 test colour
// images, 3×32×32, trained by default with Tramèr & Boneh's CNN
// ("tb-cifar10") over DP-HyPO's CIFAR-10 grid ("cifar10-dphypo"); its files
// have no default home.
func init() {
	Register(Named{Name: "cifar10", TestN: 10000, NominalN: 50000, C: 3, H: cifarSide, W: cifarSide, Classes: 10,
		ClassNames: []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"},
		Mean:       CIFAR10Mean, Std: CIFAR10Std,
		Model: "tb-cifar10", Space: "cifar10-dphypo", Load: LoadCIFAR10,
		DirHelp: "the directory holding its binary files", Rank: 1})
}

// LoadCIFAR10 reads the CIFAR-10 binary distribution from dir:
// data_batch_1.bin … data_batch_5.bin (50,000 training images) and
// test_batch.bin (10,000 test images); each file may instead be gzipped as
// NAME.bin.gz. Images come back as [N, 3, 32, 32], scaled to [0, 1] and
// normalised with CIFAR10Mean and CIFAR10Std.
//
// Errors name the file and the problem: missing directory or file, bad gzip
// stream, truncated or oversized file, label out of range.
func LoadCIFAR10(dir string) (train, test *Dataset, err error) {
	if st, err := os.Stat(dir); err != nil {
		return nil, nil, fmt.Errorf("CIFAR-10 directory: %w", err)
	} else if !st.IsDir() {
		return nil, nil, fmt.Errorf("CIFAR-10 directory %s is not a directory", dir)
	}
	var trainNames []string
	for b := 1; b <= cifarTrainBatches; b++ {
		trainNames = append(trainNames, fmt.Sprintf("data_batch_%d", b))
	}
	if train, err = loadCIFARFiles(dir, "cifar10/train", trainNames); err != nil {
		return nil, nil, err
	}
	if test, err = loadCIFARFiles(dir, "cifar10/test", []string{"test_batch"}); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

func loadCIFARFiles(dir, name string, files []string) (*Dataset, error) {
	n := len(files) * cifarPerFile
	d := &Dataset{Name: name, X: make([]float32, 0, n*3*cifarSide*cifarSide), Y: make([]uint8, 0, n),
		N: n, C: 3, H: cifarSide, W: cifarSide, Classes: 10}
	for _, f := range files {
		x, y, err := readCIFARFile(dir, f)
		if err != nil {
			return nil, err
		}
		d.X = append(d.X, x...)
		d.Y = append(d.Y, y...)
	}
	if err := d.validate(); err != nil {
		return nil, err
	}
	if err := d.Normalize(CIFAR10Mean, CIFAR10Std); err != nil {
		return nil, err
	}
	return d, nil
}

// readCIFARFile opens dir/name.bin, or dir/name.bin.gz when there is no .bin.
func readCIFARFile(dir, name string) ([]float32, []uint8, error) {
	f, path, gz, err := openFirst(dir, name+".bin", name+".bin.gz")
	if err != nil {
		return nil, nil, fmt.Errorf("CIFAR-10 file: %w", err)
	}
	defer f.Close()
	x, y, err := parseCIFAR(f, gz, cifarPerFile)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return x, y, nil
}

// parseCIFAR reads exactly records CIFAR-10 binary records from r (gunzipped
// when gz is set) and requires the stream to end there. Pixels come back
// scaled to [0, 1], [records, 3, 32, 32]; labels must be 0–9.
func parseCIFAR(r io.Reader, gz bool, records int) ([]float32, []uint8, error) {
	if gz {
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, nil, fmt.Errorf("not a gzip file: %w", err)
		}
		defer z.Close()
		r = z
	}
	br := bufio.NewReaderSize(r, 1<<16)
	const px = cifarRecord - 1
	x := make([]float32, records*px)
	y := make([]uint8, records)
	rec := make([]byte, cifarRecord)
	for i := 0; i < records; i++ {
		if got, err := io.ReadFull(br, rec); err != nil {
			return nil, nil, fmt.Errorf("truncated: record %d of %d is incomplete (%d of %d bytes): %w",
				i+1, records, got, cifarRecord, noEOF(err))
		}
		if rec[0] > 9 {
			return nil, nil, fmt.Errorf("label %d of record %d is outside 0–9", rec[0], i+1)
		}
		y[i] = rec[0]
		for k, v := range rec[1:] {
			x[i*px+k] = float32(v) / 255
		}
	}
	if _, err := br.ReadByte(); err == nil {
		return nil, nil, fmt.Errorf("oversized: data continues after %d records of %d bytes", records, cifarRecord)
	} else if err != io.EOF {
		return nil, nil, err
	}
	return x, y, nil
}
