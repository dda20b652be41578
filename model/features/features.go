// Package features computes the fixed features of a dataset — the output
// of a network's front end (model.FrontEnd: a scatter first layer, the
// scattering transform of Tramèr & Boneh's ScatterNet models) — once, with
// every core, and keeps them in an on-disk cache, so that the next run on
// the same data starts training at once and each DP-SGD step costs only
// the small network after the front end.
//
// # Privacy
//
// The transform is fixed and data-independent, so computing the features
// costs no privacy. The cache file, however, holds the private training
// data, transformed: it is curator-side, like the data itself. Load
// creates its directory with mode 0700 and writes each file with mode
// 0600; nothing in a cache file is ever released.
//
// # The cache file
//
// One file per dataset and transform, named by the SHA-256 of the
// transform's key (model.FrontEnd.Key: its settings and shapes) and of the
// dataset's content (labels and pixels, in order): a different dataset or
// transform has another name. The file is
//
//	magic "DPTFEAT1" | key length (uint32) | key | dataset hash (32 bytes) |
//	N (uint64) | features per example (uint64) | classes (uint32) |
//	features (N × features float32) | labels (N bytes) |
//	SHA-256 of everything before (32 bytes)
//
// little-endian. Load checks every header field against what it expects
// (before allocating anything), the file's exact length, and the checksum:
// a truncated, corrupt or stale file is never read as features but
// computed again and replaced (atomically: a reader sees the old file or
// the new one, never part of one). A write goes through a temporary
// directory beside the file; one that a killed process left behind holds
// part of the private features, and the next Load removes it (never a
// live writer's: see stale.go).
package features

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/fsx"
	"github.com/dptune/dptune/model"
)

// magic starts every cache file (format version 1).
const magic = "DPTFEAT1"

// chunk is how many images a worker transforms between looks at the
// context and reports of progress: about 25 ms of one core for MNIST's
// scattering transform, 90 ms for CIFAR-10's (three channels).
const chunk = 128

// Compute returns the features of d under the front end f: a dataset of
// d.N examples of f.OutC×f.OutH×f.OutW, with d's labels, named
// d.Name + "/features". The images are split between GOMAXPROCS workers;
// progress, if not nil, is called from the calling goroutine with the
// number of examples done and d.N. It stops with ctx's error within a
// chunk of images per worker when ctx is cancelled, and returns an error
// if d's images are not f's input.
func Compute(ctx context.Context, f model.FrontEnd, d *data.Dataset, progress func(done, total int)) (*data.Dataset, error) {
	if d.C != f.C || d.H != f.H || d.W != f.W {
		return nil, fmt.Errorf("features: %s holds %d×%d×%d images, the front end takes %d×%d×%d", d.Name, d.C, d.H, d.W, f.C, f.H, f.W)
	}
	tr, err := f.Transformer()
	if err != nil {
		return nil, fmt.Errorf("features: %w", err)
	}
	out := &data.Dataset{Name: d.Name + "/features", X: make([]float32, d.N*f.OutSize), Y: append([]uint8(nil), d.Y...),
		N: d.N, C: f.OutC, H: f.OutH, W: f.OutW, Classes: d.Classes}
	var next atomic.Int64
	var stop atomic.Bool
	done := make(chan int)
	errs := make(chan error, 1)
	var wg sync.WaitGroup
	for range max(1, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				lo := int(next.Add(chunk)) - chunk
				if lo >= d.N {
					return
				}
				hi := min(lo+chunk, d.N)
				for i := lo; i < hi; i++ {
					if err := tr(out.X[i*f.OutSize:(i+1)*f.OutSize], d.X[i*f.InSize:(i+1)*f.InSize]); err != nil {
						select {
						case errs <- err:
						default:
						}
						stop.Store(true)
						return
					}
				}
				done <- hi - lo
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	n := 0
	var cancelled error
	for k := range done {
		n += k
		if cancelled == nil {
			if cancelled = ctx.Err(); cancelled != nil {
				stop.Store(true)
			} else if progress != nil {
				progress(n, d.N)
			}
		}
	}
	select {
	case err := <-errs:
		return nil, fmt.Errorf("features: %w", err)
	default:
	}
	if cancelled != nil {
		return nil, cancelled
	}
	return out, nil
}

// Hash is the SHA-256 of d's content: its shape, classes, labels and
// pixels (float32 bits, little-endian), not its name.
func Hash(d *data.Dataset) [32]byte {
	h := sha256.New()
	var hdr [40]byte
	for i, v := range []int{d.N, d.C, d.H, d.W, d.Classes} {
		binary.LittleEndian.PutUint64(hdr[8*i:], uint64(v))
	}
	h.Write(hdr[:])
	h.Write(d.Y)
	writeFloats(h, d.X)
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

// writeFloats writes v to w as little-endian float32s.
func writeFloats(w io.Writer, v []float32) error {
	var buf [4096]byte
	for len(v) > 0 {
		n := min(len(v), len(buf)/4)
		for i, x := range v[:n] {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(x))
		}
		if _, err := w.Write(buf[:4*n]); err != nil {
			return err
		}
		v = v[n:]
	}
	return nil
}

// Path returns the cache file of d's features under f in dir.
func Path(dir string, f model.FrontEnd, d *data.Dataset) string {
	dh := Hash(d)
	return path(dir, f, dh)
}

func path(dir string, f model.FrontEnd, dh [32]byte) string {
	h := sha256.New()
	h.Write([]byte(f.Key()))
	h.Write([]byte{0})
	h.Write(dh[:])
	return filepath.Join(dir, hex.EncodeToString(h.Sum(nil))[:40]+".feat")
}

// Load returns d's features under f from the cache in dir, or computes
// them (Compute, with progress) and stores them there (directory mode
// 0700, file mode 0600; see the package doc). A cache file that is
// truncated, corrupt or from another transform or dataset is reported to
// warn (if not nil), computed again and replaced; a cache that cannot be
// written is reported to warn and the computed features are returned all
// the same. It first removes, and reports to warn, the partial files that
// writes killed before they finished left in dir (removeStale), never a
// live writer's. hit reports whether the features came from the cache. Errors
// are ctx's, or Compute's.
func Load(ctx context.Context, dir string, f model.FrontEnd, d *data.Dataset, progress func(done, total int), warn func(string)) (feat *data.Dataset, hit bool, err error) {
	say := func(format string, args ...any) {
		if warn != nil {
			warn(fmt.Sprintf(format, args...))
		}
	}
	if n := removeStale(dir, time.Now()); n > 0 {
		say("feature cache %s: removed %d partial file(s) of private features left by an interrupted write", dir, n)
	}
	dh := Hash(d)
	p := path(dir, f, dh)
	feat, err = read(p, f, d, dh)
	switch {
	case err == nil:
		return feat, true, nil
	case !errors.Is(err, fs.ErrNotExist):
		say("feature cache %s is not usable (%v); computing the features again", p, err)
	}
	if feat, err = Compute(ctx, f, d, progress); err != nil {
		return nil, false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		say("feature cache: %v; the features are not kept", err)
		return feat, false, nil
	}
	if err := write(p, f, feat, dh); err != nil {
		say("feature cache %s: %v; the features are not kept", p, err)
	}
	return feat, false, nil
}

// header returns the cache file's header for n examples of f's features.
func header(f model.FrontEnd, dh [32]byte, n, classes int) []byte {
	key := f.Key()
	var b bytes.Buffer
	b.WriteString(magic)
	binary.Write(&b, binary.LittleEndian, uint32(len(key)))
	b.WriteString(key)
	b.Write(dh[:])
	binary.Write(&b, binary.LittleEndian, uint64(n))
	binary.Write(&b, binary.LittleEndian, uint64(f.OutSize))
	binary.Write(&b, binary.LittleEndian, uint32(classes))
	return b.Bytes()
}

// write stores feat at p, atomically, mode 0600.
func write(p string, f model.FrontEnd, feat *data.Dataset, dh [32]byte) error {
	return fsx.WritePathAtomic(p, 0o600, func(name string) error {
		file, err := os.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		lockWriting(file) // until Close: a later run leaves this write alone
		h := sha256.New()
		bw := bufio.NewWriterSize(file, 1<<20)
		w := io.MultiWriter(bw, h)
		werr := func() error {
			if _, err := w.Write(header(f, dh, feat.N, feat.Classes)); err != nil {
				return err
			}
			if err := writeFloats(w, feat.X); err != nil {
				return err
			}
			if _, err := w.Write(feat.Y); err != nil {
				return err
			}
			if _, err := bw.Write(h.Sum(nil)); err != nil {
				return err
			}
			return bw.Flush()
		}()
		if err := file.Close(); werr == nil {
			werr = err
		}
		return werr
	})
}

// read returns the features cached at p if the file is exactly what f and
// d give: the same header, the exact length and a matching checksum. The
// error wraps fs.ErrNotExist when there is no file.
func read(p string, f model.FrontEnd, d *data.Dataset, dh [32]byte) (*data.Dataset, error) {
	file, err := fsx.Open(p)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	want := header(f, dh, d.N, d.Classes)
	size := int64(len(want)) + 4*int64(d.N)*int64(f.OutSize) + int64(d.N) + sha256.Size
	st, err := file.Stat()
	if err != nil {
		return nil, err
	}
	r := bufio.NewReaderSize(file, 1<<20)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r, got); err != nil || !bytes.Equal(got, want) {
		return nil, fmt.Errorf("its header is not this dataset's and transform's")
	}
	if st.Size() != size {
		return nil, fmt.Errorf("it has %d bytes, not %d (truncated or overlong)", st.Size(), size)
	}
	h := sha256.New()
	h.Write(got)
	feat := &data.Dataset{Name: d.Name + "/features", X: make([]float32, d.N*f.OutSize), Y: make([]uint8, d.N),
		N: d.N, C: f.OutC, H: f.OutH, W: f.OutW, Classes: d.Classes}
	if err := readFloats(io.TeeReader(r, h), feat.X); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(io.TeeReader(r, h), feat.Y); err != nil {
		return nil, err
	}
	var sum [sha256.Size]byte
	if _, err := io.ReadFull(r, sum[:]); err != nil {
		return nil, err
	}
	if !bytes.Equal(sum[:], h.Sum(nil)) {
		return nil, fmt.Errorf("its checksum does not match its content (corrupt)")
	}
	if !bytes.Equal(feat.Y, d.Y) {
		return nil, fmt.Errorf("its labels are not the dataset's")
	}
	return feat, nil
}

// readFloats fills v with little-endian float32s from r.
func readFloats(r io.Reader, v []float32) error {
	var buf [4096]byte
	for len(v) > 0 {
		n := min(len(v), len(buf)/4)
		if _, err := io.ReadFull(r, buf[:4*n]); err != nil {
			return err
		}
		for i := range v[:n] {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		}
		v = v[n:]
	}
	return nil
}
