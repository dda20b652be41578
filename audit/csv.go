package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dptune/dptune/internal/fsx"
)

// csvColumns is the CSV's column line, the last line of its header.
const csvColumns = "trial,b,stat"

// csvMagic is the CSV's first line; oldMagic starts the first line of the
// files of earlier versions, which recorded only the seed and the count.
const (
	csvMagic = "# dptune audit v2"
	oldMagic = "# dptune audit seed="
)

// maxHeader bounds the bytes CheckCSV reads to find a header.
const maxHeader = 1 << 20

// maxRecord bounds the length of one trial's line, newline included: a
// trial number below MaxTrials (9 digits), b, and a float64 in Go's
// shortest form (at most 24 characters) take at most 37 bytes.
const maxRecord = 48

// ErrOtherAudit is wrapped by the error Run and CheckCSV return when the
// trial file holds the trials of another audit: another protocol, another
// parameter, seed or trial count, or a file of an earlier version that does
// not record its protocol.
var ErrOtherAudit = errors.New("the trial file belongs to another audit")

// errOldFormat refuses a trial file of an earlier version.
var errOldFormat = fmt.Errorf("it was written by an earlier dptune whose trial files do not record the audit's protocol, so it cannot be resumed safely: %w", ErrOtherAudit)

// Param is one field of the description of an audit's protocol that its
// trial file records (Config.Protocol): Key must be non-empty and hold no
// '=', and neither may hold a line break.
type Param struct{ Key, Value string }

// record is one finished trial.
type record struct {
	trial, b int
	stat     float64
}

// csvFile is an audit CSV open for appending.
type csvFile struct{ f *os.File }

// fields is the full list of header fields of c: its protocol, then the
// seed and the trial count.
func (c Config) fields() []Param {
	return append(append([]Param(nil), c.Protocol...),
		Param{"seed", strconv.FormatUint(c.Seed, 10)}, Param{"trials", strconv.Itoa(c.Trials)})
}

// checkParams returns an error for a protocol description the header
// cannot hold unambiguously.
func checkParams(ps []Param) error {
	seen := map[string]bool{"seed": true, "trials": true, "digest": true}
	for _, p := range ps {
		if p.Key == "" || strings.ContainsAny(p.Key, "=\r\n") || strings.ContainsAny(p.Value, "\r\n") {
			return fmt.Errorf("audit: protocol field %q=%q cannot be recorded (empty key, '=' in the key or a line break)", p.Key, p.Value)
		}
		if seen[p.Key] {
			return fmt.Errorf("audit: protocol field %q is given twice or is reserved", p.Key)
		}
		seen[p.Key] = true
	}
	return nil
}

// digest is the SHA-256 of the header lines before the digest line.
func digest(lines []string) string {
	h := sha256.New()
	for _, l := range lines {
		io.WriteString(h, l)
		io.WriteString(h, "\n")
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// header returns the CSV's header lines for fields (see Run).
func header(fields []Param) string {
	lines := []string{csvMagic}
	for _, p := range fields {
		lines = append(lines, "# "+p.Key+"="+p.Value)
	}
	lines = append(lines, "# digest="+digest(lines), csvColumns)
	return strings.Join(lines, "\n") + "\n"
}

// parseHeader reads the header at the start of lines and returns its
// fields and the number of lines it takes; complete is false when lines
// end before the column line.
func parseHeader(lines []string) (fields []Param, n int, complete bool, err error) {
	if len(lines) == 0 {
		return nil, 0, false, nil
	}
	if strings.HasPrefix(lines[0], oldMagic) {
		return nil, 0, true, errOldFormat
	}
	if lines[0] != csvMagic {
		return nil, 0, true, fmt.Errorf("it is not an audit CSV (its first line is %.60q, not %q)", lines[0], csvMagic)
	}
	for i := 1; i < len(lines); i++ {
		l := lines[i]
		if d, ok := strings.CutPrefix(l, "# digest="); ok {
			if i+1 >= len(lines) {
				return nil, 0, false, nil
			}
			if lines[i+1] != csvColumns {
				return nil, 0, true, fmt.Errorf("it is not an audit CSV (line %d is %.60q, not %q)", i+2, lines[i+1], csvColumns)
			}
			if d != digest(lines[:i]) {
				return nil, 0, true, fmt.Errorf("its header's digest does not match its fields (the file was edited): %w", ErrOtherAudit)
			}
			return fields, i + 2, true, nil
		}
		kv, ok := strings.CutPrefix(l, "# ")
		k, v, ok2 := strings.Cut(kv, "=")
		if !ok || !ok2 || k == "" {
			return nil, 0, true, fmt.Errorf("it is not an audit CSV (header line %d is %.60q)", i+1, l)
		}
		fields = append(fields, Param{k, v})
	}
	return nil, 0, false, nil
}

// compareFields returns an error wrapping ErrOtherAudit naming the first
// field where the file's header (have) differs from the audit asked for
// (want), nil when they agree.
func compareFields(have, want []Param) error {
	got := make(map[string]string, len(have))
	for _, p := range have {
		got[p.Key] = p.Value
	}
	for _, p := range want {
		v, ok := got[p.Key]
		switch {
		case !ok:
			return fmt.Errorf("it holds an audit without %s (here %s=%s): %w", p.Key, p.Key, p.Value, ErrOtherAudit)
		case v != p.Value:
			return fmt.Errorf("it holds an audit with %s=%s, not %s: %w", p.Key, v, p.Value, ErrOtherAudit)
		}
		delete(got, p.Key)
	}
	for _, p := range have {
		if _, extra := got[p.Key]; extra {
			return fmt.Errorf("it holds an audit with %s=%s, which this one does not have: %w", p.Key, p.Value, ErrOtherAudit)
		}
	}
	return nil
}

// refused is the error for a trial file that cannot be resumed.
func refused(path string, err error) error {
	if errors.Is(err, ErrOtherAudit) && !errors.Is(err, errOldFormat) {
		return fmt.Errorf("audit: %s: %w; resume it with the same settings or choose another file", path, err)
	}
	return fmt.Errorf("audit: %s: %w; move it away or choose another file", path, err)
}

// CheckCSV returns nil when c.CSV is "", does not exist, or holds (the
// start of) the same audit as c, and otherwise the error Run would refuse
// it with (wrapping ErrOtherAudit for another audit's trials). It reads only
// the header and changes nothing, so a caller can refuse before any work.
func CheckCSV(c Config) error {
	if c.CSV == "" {
		return nil
	}
	if err := checkParams(c.Protocol); err != nil {
		return err
	}
	// fsx.Open refuses a FIFO or a device without waiting in open(2).
	f, err := fsx.Open(c.CSV)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("audit: reading %s: %w", c.CSV, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxHeader))
	if err != nil {
		return fmt.Errorf("audit: reading %s: %w", c.CSV, err)
	}
	lines := strings.Split(string(data[:bytes.LastIndexByte(data, '\n')+1]), "\n")
	lines = lines[:len(lines)-1]
	fields, _, complete, err := parseHeader(lines)
	if err != nil {
		return refused(c.CSV, err)
	}
	if !complete {
		return nil // a header cut short: Run rewrites it if it is the start of ours
	}
	if err := compareFields(fields, c.fields()); err != nil {
		return refused(c.CSV, err)
	}
	return nil
}

// appendRecord appends r's CSV line, newline included, to dst.
func appendRecord(dst []byte, r record) []byte {
	dst = strconv.AppendInt(dst, int64(r.trial), 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, int64(r.b), 10)
	dst = append(dst, ',')
	dst = strconv.AppendFloat(dst, r.stat, 'g', -1, 64)
	return append(dst, '\n')
}

// openCSV opens the audit CSV c.CSV, creating it if it does not exist, and
// returns the trials it already holds (see Run for the format and what is
// refused).
func openCSV(c Config) (*csvFile, []record, error) {
	path, head := c.CSV, header(c.fields())
	// fsx.ReadFile refuses a FIFO or a device without waiting in open(2),
	// and a file longer than the header and c.Trials lines could be.
	data, err := fsx.ReadFile(path, maxHeader+int64(max(c.Trials, 0))*maxRecord)
	if errors.Is(err, fs.ErrNotExist) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("audit: creating %s: %w", path, err)
		}
		if _, err := f.WriteString(head); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("audit: writing %s: %w", path, err)
		}
		return &csvFile{f}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("audit: reading %s: %w", path, err)
	}

	// Only complete lines count; a cut-short last line is dropped.
	complete := data[:bytes.LastIndexByte(data, '\n')+1]
	lines := strings.Split(string(complete), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last '\n'
	fields, n, whole, err := parseHeader(lines)
	if err != nil {
		return nil, nil, refused(path, err)
	}
	if !whole {
		// A header cut short (or an empty file) that matches ours: the
		// previous run died before any trial finished.
		if strings.HasPrefix(head, string(data)) {
			return rewriteCSV(path, head)
		}
		return nil, nil, refused(path, fmt.Errorf("its header is cut short and is not this audit's"))
	}
	if err := compareFields(fields, c.fields()); err != nil {
		return nil, nil, refused(path, err)
	}
	recs := make([]record, 0, len(lines)-n)
	seen := make(map[int]bool, len(lines)-n)
	for j, line := range lines[n:] {
		r, err := parseRecord(line, c.Trials)
		if err != nil {
			return nil, nil, fmt.Errorf("audit: %s line %d: %w", path, j+n+1, err)
		}
		if seen[r.trial] {
			return nil, nil, fmt.Errorf("audit: %s line %d: trial %d appears twice", path, j+n+1, r.trial)
		}
		seen[r.trial] = true
		recs = append(recs, r)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: opening %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("audit: %s was replaced by something that is not a regular file: %w", path, fsx.ErrNotRegular)
	}
	if len(complete) < len(data) {
		if err := f.Truncate(int64(len(complete))); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("audit: dropping the partial last line of %s: %w", path, err)
		}
	}
	return &csvFile{f}, recs, nil
}

// rewriteCSV replaces the file at path by head, through a temporary file
// in the same directory renamed over it, and opens it for appending.
func rewriteCSV(path, head string) (*csvFile, []record, error) {
	if err := fsx.WriteFileAtomic(path, []byte(head), 0o644); err != nil {
		return nil, nil, fmt.Errorf("audit: rewriting %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: opening %s: %w", path, err)
	}
	return &csvFile{f}, nil, nil
}

// parseRecord parses one "trial,b,stat" line of an audit of trials trials.
func parseRecord(line string, trials int) (record, error) {
	f := strings.Split(line, ",")
	if len(f) != 3 {
		return record{}, fmt.Errorf("%q is not a trial,b,stat line", line)
	}
	i, err := strconv.Atoi(f[0])
	if err != nil || i < 0 || i >= trials {
		return record{}, fmt.Errorf("%q: trial must be an integer in [0, %d)", line, trials)
	}
	b, err := strconv.Atoi(f[1])
	if err != nil || (b != 0 && b != 1) {
		return record{}, fmt.Errorf("%q: b must be 0 or 1", line)
	}
	s, err := strconv.ParseFloat(f[2], 64)
	if err != nil || math.IsNaN(s) {
		return record{}, fmt.Errorf("%q: stat must be a number", line)
	}
	return record{trial: i, b: b, stat: s}, nil
}
