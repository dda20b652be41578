package audit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// csvColumns is the CSV's second header line.
const csvColumns = "trial,b,stat"

// headerPrefix starts the CSV's first header line.
const headerPrefix = "# dptune audit seed="

// record is one finished trial.
type record struct {
	trial, b int
	stat     float64
}

// csvFile is an audit CSV open for appending.
type csvFile struct{ f *os.File }

// header returns the CSV's two header lines.
func header(seed uint64, trials int) string {
	return fmt.Sprintf("%s%d trials=%d\n%s\n", headerPrefix, seed, trials, csvColumns)
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

// openCSV opens the audit CSV at path for an audit of trials trials under
// seed, creating it if it does not exist, and returns the trials it already
// holds (see Run for the format and what is refused).
func openCSV(path string, seed uint64, trials int) (*csvFile, []record, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o644)
		if err != nil {
			return nil, nil, fmt.Errorf("audit: creating %s: %w", path, err)
		}
		if _, err := f.WriteString(header(seed, trials)); err != nil {
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
	if len(lines) < 2 {
		// A header cut short (or an empty file) that matches ours: the
		// previous run died before any trial finished.
		if strings.HasPrefix(header(seed, trials), string(data)) {
			return rewriteCSV(path, header(seed, trials), nil, nil)
		}
		return nil, nil, fmt.Errorf("audit: %s is not an audit CSV (no complete %q header); move it away or choose another file", path, "# dptune audit seed=… trials=…")
	}
	oldSeed, oldTrials, err := parseHeader(lines[0])
	if err != nil || lines[1] != csvColumns {
		return nil, nil, fmt.Errorf("audit: %s is not an audit CSV (its header is %q, %q); move it away or choose another file", path, lines[0], lines[1])
	}
	if oldSeed != seed {
		return nil, nil, fmt.Errorf("audit: %s holds an audit with seed %d, not %d; use that seed to resume it or choose another file", path, oldSeed, seed)
	}
	if oldTrials > trials {
		return nil, nil, fmt.Errorf("audit: %s holds an audit of %d trials, more than the %d asked for; resume it with at least %d trials or choose another file", path, oldTrials, trials, oldTrials)
	}
	recs := make([]record, 0, len(lines)-2)
	seen := make(map[int]bool, len(lines)-2)
	for j, line := range lines[2:] {
		r, err := parseRecord(line, oldTrials)
		if err != nil {
			return nil, nil, fmt.Errorf("audit: %s line %d: %w", path, j+3, err)
		}
		if seen[r.trial] {
			return nil, nil, fmt.Errorf("audit: %s line %d: trial %d appears twice", path, j+3, r.trial)
		}
		seen[r.trial] = true
		recs = append(recs, r)
	}
	if oldTrials != trials {
		// The count grows: rewrite the header, keeping the records.
		body := complete[len(lines[0])+1+len(lines[1])+1:]
		return rewriteCSV(path, header(seed, trials), body, recs)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: opening %s: %w", path, err)
	}
	if len(complete) < len(data) {
		if err := f.Truncate(int64(len(complete))); err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("audit: dropping the partial last line of %s: %w", path, err)
		}
	}
	return &csvFile{f}, recs, nil
}

// rewriteCSV replaces the file at path by head followed by body, through a
// temporary file in the same directory renamed over it, and opens it for
// appending.
func rewriteCSV(path, head string, body []byte, recs []record) (*csvFile, []record, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return nil, nil, fmt.Errorf("audit: rewriting %s: %w", path, err)
	}
	werr := func() error {
		if err := tmp.Chmod(0o644); err != nil {
			return err
		}
		if _, err := tmp.WriteString(head); err != nil {
			return err
		}
		if _, err := tmp.Write(body); err != nil {
			return err
		}
		if err := tmp.Sync(); err != nil {
			return err
		}
		return tmp.Close()
	}()
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, nil, fmt.Errorf("audit: rewriting %s: %w", path, werr)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("audit: opening %s: %w", path, err)
	}
	return &csvFile{f}, recs, nil
}

// parseHeader parses the CSV's first header line.
func parseHeader(line string) (seed uint64, trials int, err error) {
	rest, ok := strings.CutPrefix(line, headerPrefix)
	if !ok {
		return 0, 0, errors.New("not an audit header")
	}
	s, t, ok := strings.Cut(rest, " trials=")
	if !ok {
		return 0, 0, errors.New("not an audit header")
	}
	if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
		return 0, 0, err
	}
	if trials, err = strconv.Atoi(t); err != nil || trials < 1 {
		return 0, 0, errors.New("not an audit header")
	}
	return seed, trials, nil
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
