package tuning

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dptune/dptune/dpsgd"
	"github.com/dptune/dptune/internal/fsx"
)

// The partition-score cache (PartitionScorer.Cache) is a text file of lines
// of at most maxCacheLine bytes, each ending in '\n':
//
//	# NOT PRIVATE, curator only: dptune partition scores v2: arch=… parts=k candidates=n settings-sha256=…
//	cand,part,accuracy
//	search,{"epsilon0":…,"granularity":…,"u0":…,"max_iterations":…,"epsilon":…,"time":"…"}
//
// The header is a short readable summary and a SHA-256 digest of every
// setting the scores depend on (so its length does not grow with the
// space); a record is written whole by one write call.
const (
	maxCacheLine      = 4096
	cacheHeaderPrefix = "# NOT PRIVATE, curator only: dptune partition scores v2: "
	searchPrefix      = "search,"
)

// SearchRecord is one doubling search served by a cache: its parameters and
// the ε it is charged.
type SearchRecord struct {
	Epsilon0      float64 `json:"epsilon0"`       // ϵ of one iteration (CappedSearchConfig.Epsilon0)
	Granularity   float64 `json:"granularity"`    // g, in (0, 1)
	U0            float64 `json:"u0"`             // u₀, in [0, 1)
	MaxIterations int     `json:"max_iterations"` // T_max, at least 1
	// Epsilon is the search's charged ε: MaxIterations·IterationEpsilon
	// (pure DP), positive and finite.
	Epsilon float64 `json:"epsilon"`
	Time    string  `json:"time"` // when the search ran, RFC 3339
	// Tuning names the tuning that ran the search
	// (PartitionScorer.Invocation), absent for one without a name: a
	// resumed tuning's search, drawn again from the same key on the same
	// scores, is the same search as its earlier process's, not one more.
	Tuning string `json:"tuning,omitempty"`
}

// fingerprint is the cache header for space s: a readable summary and the
// SHA-256 digest of the settings the scores depend on.
func (p *PartitionScorer) fingerprint(s Space) string {
	h := sha256.New()
	fmt.Fprintf(h, "arch=%q c=%d h=%d w=%d classes=%d\nsplit=%q\nsizes=", p.Arch.Name, p.Arch.C, p.Arch.H, p.Arch.W, p.Arch.Classes, p.SplitID)
	for _, part := range p.Parts {
		fmt.Fprintf(h, "%d,", part.N)
	}
	fmt.Fprintf(h, "\nval=%d nominal=%d epochs=%d batch=%d q=%s momentum=%s private=%v sigma=%s seed=%d\n",
		p.Val.N, p.ValSize, p.Epochs, p.BatchSize, fmtFloat(p.SamplingRate), fmtFloat(p.Momentum), p.Private, fmtFloat(p.NoiseMultiplier), p.Seed)
	for _, d := range s.Dims {
		fmt.Fprintf(h, "dim=%q log=%v values=", d.Name, d.Log)
		for _, v := range d.Values {
			fmt.Fprintf(h, "%s,", fmtFloat(v))
		}
		if d.Choices != nil {
			fmt.Fprintf(h, " choices=%q", d.Choices)
		}
		fmt.Fprintln(h)
	}
	// The scorer's own settings that a candidate without the dimension
	// takes.
	has := func(name string) bool { return slices.ContainsFunc(s.Dims, func(d Dim) bool { return d.Name == name }) }
	if !has(LearningRate) {
		fmt.Fprintf(h, "learning_rate=%s\n", fmtFloat(p.LearningRate))
	}
	if !has(ClipNorm) {
		fmt.Fprintf(h, "clip_norm=%s\n", fmtFloat(p.ClipNorm))
	}
	if p.Clipping != dpsgd.FlatClipping {
		// Flat clipping's caches keep the digest they had.
		fmt.Fprintf(h, "clipping=%s gamma=%s\n", p.Clipping, fmtFloat(p.AutoClipGamma))
	}
	if !has(LRSchedule) && p.Schedule != dpsgd.ConstantLR {
		fmt.Fprintf(h, "lr_schedule=%s\n", p.Schedule)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Networks)) {
		spec, _ := json.Marshal(p.Networks[name])
		fmt.Fprintf(h, "network=%q %s\n", name, spec)
	}
	if d := p.Default; d != nil {
		fmt.Fprint(h, "default=")
		for _, name := range slices.Sorted(maps.Keys(d.Values)) {
			fmt.Fprintf(h, "%q:%s,", name, fmtFloat(d.Values[name]))
		}
		fmt.Fprintln(h)
	}
	return fmt.Sprintf("%sarch=%.64q parts=%d candidates=%d settings-sha256=%x", cacheHeaderPrefix, p.Arch.Name, len(p.Parts), p.candidates(s), h.Sum(nil))
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// parseCache reads a partition-score cache from r; name (the file's name)
// labels the errors. If header is not "", the first line must equal it;
// else it must only look like a cache header. If cands ≥ 0, candidate
// indices must be below cands and the scores are returned as
// scores[cand][part] with have marking the ones present; else (the space is
// unknown) scores and have are nil. Part indices must be below parts.
//
// A last line without '\n' is a partial write: it is discarded with a
// warning. validLen is the length of the complete lines, where an append
// must start. Every error names the file and line.
func parseCache(r io.Reader, name, header string, cands, parts int) (scores [][]float64, have [][]bool, searches []SearchRecord, validLen int64, warnings []string, err error) {
	if cands >= 0 {
		scores, have = make([][]float64, cands), make([][]bool, cands)
		for i := range scores {
			scores[i], have[i] = make([]float64, parts), make([]bool, parts)
		}
	}
	var seen map[[2]int]float64 // duplicates when cands < 0
	if cands < 0 {
		seen = map[[2]int]float64{}
	}
	br := bufio.NewReaderSize(r, maxCacheLine+1)
	for line := 1; ; line++ {
		b, rerr := br.ReadSlice('\n')
		switch {
		case errors.Is(rerr, bufio.ErrBufferFull):
			return nil, nil, nil, 0, nil, fmt.Errorf("tuning: %s, line %d: longer than %d bytes: not a partition-score cache or corrupt", name, line, maxCacheLine)
		case rerr == io.EOF:
			if len(b) > 0 {
				warnings = append(warnings, fmt.Sprintf("tuning: %s, line %d: discarding an incomplete last line of %d bytes (an interrupted write)", name, line, len(b)))
			}
			return scores, have, searches, validLen, warnings, nil
		case rerr != nil:
			return nil, nil, nil, 0, nil, fmt.Errorf("tuning: %s, line %d: %w", name, line, rerr)
		}
		text := string(b[:len(b)-1])
		fail := func(format string, args ...any) error {
			return fmt.Errorf("tuning: %s, line %d: "+format, append([]any{name, line}, args...)...)
		}
		switch {
		case line == 1:
			if header != "" && text != header || !strings.HasPrefix(text, cacheHeaderPrefix) {
				return nil, nil, nil, 0, nil, fail("the header does not match: the file holds scores of another partition or other settings, or was written by another version of dptune; a rerun resumes only with the same --seed and settings (else remove the file or name another cache)")
			}
		case strings.HasPrefix(text, searchPrefix):
			var rec SearchRecord
			dec := json.NewDecoder(strings.NewReader(text[len(searchPrefix):]))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&rec); err != nil {
				return nil, nil, nil, 0, nil, fail("bad search record: %v", err)
			}
			if _, err := dec.Token(); err != io.EOF {
				return nil, nil, nil, 0, nil, fail("bad search record: data after the JSON object")
			}
			if err := rec.check(); err != nil {
				return nil, nil, nil, 0, nil, fail("bad search record: %v", err)
			}
			searches = append(searches, rec)
		default:
			f := strings.Split(text, ",")
			if len(f) != 3 {
				return nil, nil, nil, 0, nil, fail("bad record %.80q: want cand,part,accuracy", text)
			}
			i, err1 := strconv.Atoi(f[0])
			j, err2 := strconv.Atoi(f[1])
			acc, err3 := strconv.ParseFloat(f[2], 64)
			switch {
			case err1 != nil || err2 != nil || err3 != nil:
				return nil, nil, nil, 0, nil, fail("bad record %q: want cand,part,accuracy", text)
			case i < 0:
				return nil, nil, nil, 0, nil, fail("candidate index %d is negative", i)
			case cands >= 0 && i >= cands:
				return nil, nil, nil, 0, nil, fail("candidate %d is outside the space's %d candidates", i, cands)
			case j < 0 || j >= parts:
				return nil, nil, nil, 0, nil, fail("part %d is outside the %d parts", j, parts)
			case !(acc >= 0 && acc <= 1):
				return nil, nil, nil, 0, nil, fail("accuracy %v is outside [0, 1]", acc)
			}
			if cands >= 0 {
				if have[i][j] && scores[i][j] != acc {
					return nil, nil, nil, 0, nil, fail("candidate %d, part %d scored %v here and %v before", i, j, acc, scores[i][j])
				}
				scores[i][j], have[i][j] = acc, true
			} else {
				if old, ok := seen[[2]int{i, j}]; ok && old != acc {
					return nil, nil, nil, 0, nil, fail("candidate %d, part %d scored %v here and %v before", i, j, acc, old)
				}
				seen[[2]int{i, j}] = acc
			}
		}
		validLen += int64(len(b))
	}
}

// warn passes msg to p.Warn, if any.
func (p *PartitionScorer) warn(msg string) {
	if p.Warn != nil {
		p.Warn(msg)
	}
}

// readCache reads the cache's scores for a space of n candidates under
// header fp, warns about and truncates away a partial last line, and
// returns the per-part scores and which are present.
func (p *PartitionScorer) readCache(fp string, n int) ([][]float64, [][]bool, error) {
	k := len(p.Parts)
	if p.Cache == "" {
		per, have, _, _, _, err := parseCache(bytes.NewReader(nil), "", fp, n, k)
		return per, have, err
	}
	f, err := fsx.Open(p.Cache)
	if errors.Is(err, fs.ErrNotExist) {
		per, have, _, _, _, err := parseCache(bytes.NewReader(nil), p.Cache, fp, n, k)
		return per, have, err
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	per, have, _, valid, warnings, err := parseCache(f, p.Cache, fp, n, k)
	if err != nil {
		return nil, nil, err
	}
	for _, w := range warnings {
		p.warn(w)
	}
	if st, err := f.Stat(); err != nil {
		return nil, nil, err
	} else if st.Size() > valid {
		if err := os.Truncate(p.Cache, valid); err != nil {
			return nil, nil, fmt.Errorf("tuning: removing the partial last line of %s: %w", p.Cache, err)
		}
	}
	return per, have, nil
}

// appendCache appends one line (without its '\n') to the cache, with the
// header first if the file is empty, in a single write. A partial last line
// left by an interrupted writer is cut off first, so the line never glues
// onto it.
func (p *PartitionScorer) appendCache(header, line string) error {
	if p.Cache == "" {
		return nil
	}
	if len(line) > maxCacheLine || len(header) > maxCacheLine {
		return fmt.Errorf("tuning: %s: a cache line would be longer than %d bytes", p.Cache, maxCacheLine)
	}
	f, err := os.OpenFile(p.Cache, os.O_CREATE|os.O_APPEND|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	size := st.Size()
	if size > 0 {
		end, err := completeLength(f, size)
		if err != nil {
			return fmt.Errorf("tuning: %s: %w", p.Cache, err)
		}
		if end < size {
			p.warn(fmt.Sprintf("tuning: %s: discarding an incomplete last line of %d bytes (an interrupted write)", p.Cache, size-end))
			if err := f.Truncate(end); err != nil {
				return fmt.Errorf("tuning: removing the partial last line of %s: %w", p.Cache, err)
			}
			size = end
		}
	}
	var buf []byte
	if size == 0 {
		buf = append(append(buf, header...), '\n')
	}
	buf = append(append(buf, line...), '\n')
	if _, err := f.Write(buf); err != nil {
		return err
	}
	return f.Close()
}

// completeLength returns the length of f's complete lines: size if the
// file's last byte is '\n', else the offset just after its last '\n' (0 if
// none).
func completeLength(f *os.File, size int64) (int64, error) {
	buf := make([]byte, 4096)
	for end := size; end > 0; {
		start := max(0, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return start + int64(i) + 1, nil
		}
		end = start
	}
	return 0, nil
}

// Searches returns the doubling searches recorded in Cache (nil if there is
// no cache file or Cache is ""), but for those of p's own tuning
// (Invocation, when set: a resumed tuning's earlier processes ran the same
// search). After Scores it checks the whole file against the space and
// settings Scores used; before, it checks only the records' form. A
// partial last line is ignored with a warning; a malformed file is an
// error naming the file and line. It must not run concurrently with
// Scores or RecordSearch.
func (p *PartitionScorer) Searches() ([]SearchRecord, error) {
	all, err := p.allSearches()
	if err != nil || p.Invocation == "" {
		return all, err
	}
	var out []SearchRecord
	for _, r := range all {
		if r.Tuning != p.Invocation {
			out = append(out, r)
		}
	}
	return out, nil
}

// allSearches is Searches with p's own tuning's searches.
func (p *PartitionScorer) allSearches() ([]SearchRecord, error) {
	if p.Cache == "" {
		return nil, nil
	}
	f, err := fsx.Open(p.Cache)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cands := -1
	if p.header != "" {
		cands = p.cands
	}
	_, _, searches, _, warnings, err := parseCache(f, p.Cache, p.header, cands, len(p.Parts))
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		p.warn(w)
	}
	return searches, nil
}

// RecordSearch appends r to Cache as one whole line, tagged with
// p.Invocation; it is a no-op when Cache is "", and when the cache already
// holds a search of that tuning (a resumed tuning's earlier process
// recorded it). It records a search on the scores the last Scores call
// returned, so it is an error before Scores; an empty r.Time is set to the
// current UTC time. It returns an error if r is not a record a search can produce
// (a field outside its domain: see SearchRecord) or the line would be longer than the cache's 4096-byte
// limit. It must not run concurrently with Scores or Searches.
func (p *PartitionScorer) RecordSearch(r SearchRecord) error {
	if p.Cache == "" {
		return nil
	}
	if p.header == "" {
		return fmt.Errorf("tuning: RecordSearch before Scores: a search record belongs to the scores of %s", p.Cache)
	}
	if err := r.check(); err != nil {
		return fmt.Errorf("tuning: search record: %w", err)
	}
	if r.Time == "" {
		r.Time = time.Now().UTC().Format(time.RFC3339)
	}
	if r.Tuning = p.Invocation; r.Tuning != "" {
		all, err := p.allSearches()
		if err != nil {
			return err
		}
		for _, e := range all {
			if e.Tuning == r.Tuning {
				return nil
			}
		}
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("tuning: search record: %w", err)
	}
	return p.appendCache(p.header, searchPrefix+string(b))
}
