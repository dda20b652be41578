package job

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"math"
	"sync"
	"weak"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/internal/randsrc"
	"github.com/dptune/dptune/runner"
)

// A job that runs on a worker (runner.Remote: `dptune worker` on Temporal)
// names its data by name and directory, and the worker reads its own copy.
// That copy may differ from the curator's: another folder at the same
// path, a file edited since, or a copy the worker has kept in memory by
// name (dataCache) while the curator changed the files. Trained on, it
// would make the curator release runs of data other than the data its
// ledger and budget file count. So the job's data reference carries a
// digest of the curator's data, and the worker checks its copy against it
// before it trains.
//
// The digest is of the content: the decoded training and test tensors, as
// the job's network would read them before any front end (their shapes,
// pixels as float32 bits and labels; contentSum), and the public settings
// that made them (the dataset's name, its fixed subset, an image folder's
// input shape, resizing rule, pixel constants and nominal size). Two
// levels:
//
//   - contentSum is SHA-256 of that canonical encoding, computed once per
//     process and set of tensors (memoised while the tensors live). It is
//     never written, logged, sent or put in an error: an unkeyed hash of
//     private tensors would tell neighbouring datasets apart to whoever saw
//     it.
//   - What a job carries (keyedDigest) is HMAC-SHA256 of the content sum
//     under a key derived from the invocation's secret key (runner.Keyed:
//     Key().Derive("data digest")). The key travels beside the MAC, in
//     the same job input: whoever reads the input holds both, so the
//     MAC's secrecy rests on the sealing alone (temporalrunner's codec,
//     AES-GCM, role "job input"), not on the key. That is enough: only
//     the curator and the workers, which hold the payload key anyway (and
//     the data), can open the input; to the server it is ciphertext. It
//     is the same for every job of one invocation and of its resumes (so
//     a resumed curator submits the same jobs), and different across
//     invocations. It appears in no workflow ID, log line or file (an
//     audit's CSV header records the data without it: withoutDigest); the
//     task ID's SHA-256 of the whole input (temporalrunner) is of an input
//     that holds the secret key, so it tells no more.
//
// A worker whose copy's digest differs refuses the job with one line
// naming the dataset (dataDiffers, wrapping runner.ErrDataDiffers and so
// runner.ErrInvalidInput, so the task fails at once instead of being
// retried): nothing about how, or by
// how much, the copies differ goes back. A copy it had in memory by name
// is read again from its files first, so a worker that cached a dataset
// before the curator changed it trains on the new files, not the old.

// keyedDigest is a job's keyed digest of its data's content.
type keyedDigest struct {
	// Key is the digest's secret key (a subkey of the invocation's key).
	Key randsrc.Key `json:"key"`
	// MAC is HMAC-SHA256(Key, "dptune data digest v1" ‖ 0x00 ‖ the content
	// sum), hex.
	MAC string `json:"mac"`
}

// digestKeyPurpose derives an invocation's digest key (randsrc.Key.Derive).
const digestKeyPurpose = "data digest"

// macOf is the hex MAC of sum under key.
func macOf(key randsrc.Key, sum [32]byte) string {
	m := hmac.New(sha256.New, key[:])
	m.Write([]byte("dptune data digest v1\x00"))
	m.Write(sum[:])
	return hex.EncodeToString(m.Sum(nil))
}

// matches reports whether sum is the content sum d was made of.
func (d *keyedDigest) matches(sum [32]byte) bool {
	return hmac.Equal([]byte(macOf(d.Key, sum)), []byte(d.MAC))
}

// dataDiffers is a worker's refusal of a job whose data digest its copy
// does not match: one line, naming the dataset only.
func dataDiffers(name string) error {
	return fmt.Errorf("job: dataset %s: this worker's copy of the data differs from the curator's (its content digest is not the job's); the worker must read a copy of the curator's files (a worker's --data-dir, if given, is the one directory of every dataset but MNIST, a public validation set's included): %w",
		name, runner.ErrDataDiffers)
}

// contentID is the public part of a content sum: what made the tensors.
type contentID struct {
	Dataset string     `json:"dataset"`
	Subset  *Subset    `json:"subset,omitempty"`
	Folder  *folderRef `json:"folder,omitempty"`
}

func (c contentID) String() string {
	b, _ := json.Marshal(c) // always marshals
	return string(b)
}

// contentSum is SHA-256 of id and the tensors train and test (either may
// be nil) in a canonical encoding: a version tag, id's JSON (length
// first), then for each set a presence byte and, when present, N, C, H, W
// and Classes (8 bytes each, big-endian), the pixels as little-endian
// float32 bits, their count, and the labels. The sets' names are left out
// (they say where a copy lives, not what it holds). It stays in this
// process (see keyedDigest).
func contentSum(id contentID, train, test *data.Dataset) [32]byte {
	h := sha256.New()
	h.Write([]byte("dptune data content v1\x00"))
	s := id.String()
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(s)))
	h.Write(n[:])
	h.Write([]byte(s))
	for _, d := range []*data.Dataset{train, test} {
		writeSet(h, d)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}

// memoSum is sum(), memoised under id and the sets a and b it is a fixed
// function of, while they live (weak pointers; the sets are never
// modified), so that a process hashes a dataset once, not once per job.
func memoSum(id contentID, a, b *data.Dataset, sum func() [32]byte) [32]byte {
	k := sumKey{weak.Make(a), weak.Make(b), id.String()}
	sums.Lock()
	s, ok := sums.m[k]
	sums.Unlock()
	if ok {
		return s
	}
	s = sum()
	sums.Lock()
	defer sums.Unlock()
	for old := range sums.m {
		if old.a.Value() == nil && old.b.Value() == nil {
			delete(sums.m, old) // its sets are gone: never asked again
		}
	}
	sums.m[k] = s
	return s
}

// sumKey names a memoised content sum: its sets (weakly) and their id.
type sumKey struct {
	a, b weak.Pointer[data.Dataset]
	id   string
}

var sums = struct {
	sync.Mutex
	m map[sumKey][32]byte
}{m: map[sumKey][32]byte{}}

// writeSet writes d's canonical encoding to h (contentSum).
func writeSet(h hash.Hash, d *data.Dataset) {
	if d == nil {
		h.Write([]byte{0})
		return
	}
	h.Write([]byte{1})
	var b [8]byte
	for _, v := range []int{d.N, d.C, d.H, d.W, d.Classes} {
		binary.BigEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
	}
	buf := make([]byte, 0, 1<<16)
	for i, x := range d.X {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		if len(buf) == cap(buf) || i == len(d.X)-1 {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	binary.BigEndian.PutUint64(b[:], uint64(len(d.X)))
	h.Write(b[:])
	h.Write(d.Y)
}

// contentID is what made s's tensors (contentSum's id).
func (s Source) contentID() contentID {
	return contentID{Dataset: s.Name, Subset: s.Subset, Folder: s.read}
}

// contentID is what made r's tensors (as Source.contentID of the source r
// names).
func (r dataRef) contentID() contentID {
	return contentID{Dataset: r.Dataset, Subset: r.Subset, Folder: r.Folder}
}

// contentCheck is a Source's digest for jobs on workers: the invocation's
// digest key and the content sum of what its Load last read.
type contentCheck struct {
	key randsrc.Key
	mu  sync.Mutex
	sum *[32]byte
}

// digest is the keyed digest of what c's source last read; nil when c is
// nil (jobs in this process) or nothing was read yet.
func (c *contentCheck) digest() *keyedDigest {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sum == nil {
		return nil
	}
	return &keyedDigest{Key: c.key, MAC: macOf(c.key, *c.sum)}
}

// ForRunner returns s for the jobs of run: when they run on workers
// (runner.Remote), each read of s (Load, LoadInputs) also computes a sum
// of what it read, and the jobs made from s after it name the data by its
// keyed digest, which each worker checks its own copy against (refusing,
// in one line, a copy that differs); for any other runner, s itself. Tune
// and Audit apply it themselves; a caller of LandscapeJobs applies it
// before LoadInputs. Apply it after WithSubset and WithDevSplit.
func (s Source) ForRunner(run runner.Runner) Source {
	r, ok := run.(runner.Remote)
	if !ok {
		return s
	}
	k := randsrc.Key(r.Key())
	c := &contentCheck{key: *k.Derive(digestKeyPurpose)}
	id := s.contentID()
	record := func(train, test *data.Dataset) {
		sum := memoSum(id, train, test, func() [32]byte { return contentSum(id, train, test) })
		c.mu.Lock()
		c.sum = &sum
		c.mu.Unlock()
	}
	if load := s.Load; load != nil {
		s.Load = func() (*data.Dataset, *data.Dataset, error) {
			train, test, err := load()
			if err == nil {
				record(train, test)
			}
			return train, test, err
		}
	}
	if load := s.loadContext; load != nil {
		s.loadContext = func(ctx context.Context, warn func(string)) (*data.Dataset, *data.Dataset, error) {
			train, test, err := load(ctx, warn)
			if err == nil {
				record(train, test)
			}
			return train, test, err
		}
	}
	s.check = c
	return s
}

// forWorkers returns s with its training data and public validation set
// read for jobs of its runner (Source.ForRunner).
func (s TuneSpec) forWorkers() TuneSpec {
	s.Data = s.Data.ForRunner(s.Runner)
	if s.PublicVal != nil {
		p := s.PublicVal.ForRunner(s.Runner)
		s.PublicVal = &p
	}
	return s
}

// workerRef is s.ref() for jobs of run, with the keyed digest of s's data
// when run's jobs run on workers, reading s's data again to compute it
// (an audit opens its runner after it has read the data).
func (s Source) workerRef(run runner.Runner) (dataRef, error) {
	w := s.ForRunner(run)
	if w.check == nil || w.Load == nil {
		return s.ref(), nil
	}
	if _, _, err := w.Load(); err != nil {
		return dataRef{}, err
	}
	return w.ref(), nil
}

// verified returns the sets load gives (fresh false: from this process's
// cache when it has them) as cut makes them from it (r's fixed subset),
// once they match r's digest, and their content sum (zero without a
// digest): a copy from the cache that does not match is read again from
// its files (fresh true) once; a copy read from the files that does not
// is refused (dataDiffers), and so is the same copy for the next job of
// the same digest, without reading the files again. Without a digest
// (jobs in the curator's process) it cuts what load gives.
func (r dataRef) verified(load func(fresh bool) (train, test *data.Dataset, cached bool, err error),
	cut func(train, test *data.Dataset) (*data.Dataset, *data.Dataset, error)) (train, test *data.Dataset, sum [32]byte, err error) {
	for fresh := false; ; fresh = true {
		full, fullTest, cached, err := load(fresh)
		if err != nil {
			return nil, nil, sum, err
		}
		train, test, err := cut(full, fullTest)
		if err != nil || r.Digest == nil {
			return train, test, sum, err
		}
		id := r.contentID()
		sum = memoSum(id, full, fullTest, func() [32]byte { return contentSum(id, train, test) })
		if r.Digest.matches(sum) {
			return train, test, sum, nil
		}
		if fresh || !cached || refusedBefore(r.Digest, full) {
			rememberRefusal(r.Digest, full)
			return nil, nil, [32]byte{}, dataDiffers(r.Dataset)
		}
	}
}

// withoutDigest is r with no digest (nor its public validation set's):
// what may be written to a file (an audit's CSV header). A digest's key
// and MAC travel only inside a sealed job input.
func (r dataRef) withoutDigest() dataRef {
	r.Digest = nil
	if r.Public != nil {
		p := r.Public.withoutDigest()
		r.Public = &p
	}
	return r
}

// digestRequired refuses, in a task running on a remote worker
// (runner.IsOnWorker), a data reference r without the curator's digest
// (nor its public validation set's), in one line wrapping
// runner.ErrInvalidInput: a worker trains only on a copy it has checked.
// In this process (no mark) a reference needs none: the data is the
// curator's own.
func (r *dataRef) digestRequired(ctx context.Context) error {
	if r == nil || !runner.IsOnWorker(ctx) {
		return nil
	}
	if r.Digest == nil {
		return fmt.Errorf("job: dataset %s: the task names its data without the curator's content digest, and a worker trains only on a copy it has checked: %w", r.Dataset, runner.ErrInvalidInput)
	}
	return r.Public.digestRequired(ctx)
}

// refusedCopies remembers, for each digest refused, the copy (its training set
// as read) it was refused on.
var refusedCopies = struct {
	sync.Mutex
	m map[string]weak.Pointer[data.Dataset]
}{m: map[string]weak.Pointer[data.Dataset]{}}

// refusedBefore reports whether d was refused on train before.
func refusedBefore(d *keyedDigest, train *data.Dataset) bool {
	refusedCopies.Lock()
	defer refusedCopies.Unlock()
	p, ok := refusedCopies.m[d.MAC]
	return ok && p.Value() == train
}

// rememberRefusal records that d was refused on train.
func rememberRefusal(d *keyedDigest, train *data.Dataset) {
	refusedCopies.Lock()
	defer refusedCopies.Unlock()
	for k, p := range refusedCopies.m {
		if p.Value() == nil {
			delete(refusedCopies.m, k)
		}
	}
	refusedCopies.m[d.MAC] = weak.Make(train)
}

// source is the Source a worker's audit reads r from (its Load is then
// r.raw): a registered dataset, or an image folder by its name and
// directory (read as r.Folder says). Errors wrap ErrInvalid.
func (r dataRef) source() (Source, error) {
	if r.Folder == nil {
		return Dataset(r.Dataset, r.Dir)
	}
	if err := CheckFolderDatasetName(r.Dataset); err != nil {
		return Source{}, err
	}
	return Source{Name: r.Dataset, Dir: r.Dir, read: r.Folder}, nil
}
