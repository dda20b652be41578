package tuning

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	"github.com/dptune/dptune/model"
)

// cacheScorer is a partition scorer on tiny data with a 2-candidate space
// and 2 parts, its cache in a fresh directory, counting runs and warnings.
func cacheScorer(t *testing.T) (*PartitionScorer, Space, *int, *[]string) {
	t.Helper()
	runs, warnings := new(int), new([]string)
	p := &PartitionScorer{Arch: model.MNIST, Parts: []*data.Dataset{tinyMNIST(30, 1), tinyMNIST(30, 2)}, Val: tinyMNIST(20, 3),
		ValSize: 20, Epochs: 1, BatchSize: 16, SamplingRate: 16.0 / 30, Seed: 5, SplitID: "test", Cache: filepath.Join(t.TempDir(), "scores.csv"),
		Progress: func(int, int) { *runs++ },
		Warn:     func(msg string) { *warnings = append(*warnings, msg) }}
	s := Space{Name: "two", Dims: []Dim{{Name: LearningRate, Values: []float64{0.1, 0.5}}, {Name: ClipNorm, Values: []float64{1}}}}
	return p, s, runs, warnings
}

func writeFile(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The header is short, whatever the size of the space.
func TestCacheHeaderIsBounded(t *testing.T) {
	p, _, _, _ := cacheScorer(t)
	s, _ := BuiltinSpace("cifar10-dphypo")
	fp := p.fingerprint(s)
	if len(fp) > 300 || !strings.HasPrefix(fp, cacheHeaderPrefix) || !strings.Contains(fp, "candidates=2500") {
		t.Errorf("header %q", fp)
	}
	// It covers the values and the dimension names.
	s2 := Space{Name: s.Name, Dims: []Dim{s.Dims[0], {Name: s.Dims[1].Name, Values: append([]float64{3}, s.Dims[1].Values[1:]...)}}}
	s3 := Space{Name: "renamed", Dims: []Dim{s.Dims[1], s.Dims[0]}}
	if p.fingerprint(s2) == fp || p.fingerprint(s3) == fp {
		t.Error("header does not depend on the space")
	}
}

// A truncated last line (a killed write) is discarded with a warning and cut
// off, so the next record lands on its own line and the file re-reads
// cleanly.
func TestCacheTruncatedLastLine(t *testing.T) {
	p, s, runs, warnings := cacheScorer(t)
	fp := p.fingerprint(s)
	writeFile(t, p.Cache, fp+"\n0,0,0.5\n0,1,0.25\n1,0,0.75\n1,1,0.")
	u, per, err := p.Scores(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if *runs != 1 {
		t.Errorf("%d runs, want 1 (the discarded record)", *runs)
	}
	if len(*warnings) != 1 || !strings.Contains((*warnings)[0], p.Cache) || !strings.Contains((*warnings)[0], "line 5") {
		t.Errorf("warnings %q", *warnings)
	}
	if per[0][0] != 0.5 || per[0][1] != 0.25 || per[1][0] != 0.75 || u[0] != 0.375 {
		t.Errorf("cached scores %v, u %v", per, u)
	}
	text := readFile(t, p.Cache)
	lines := strings.Split(text, "\n")
	if len(lines) != 6 || lines[5] != "" || lines[4] != "1,1,"+fmtFloat(per[1][1]) {
		t.Fatalf("file after the append:\n%s", text)
	}
	scores, have, _, valid, warn, err := parseCache(strings.NewReader(text), p.Cache, fp, 2, 2)
	if err != nil || len(warn) != 0 || valid != int64(len(text)) {
		t.Fatalf("re-read: %v, warnings %q, valid %d of %d", err, warn, valid, len(text))
	}
	for i := range have {
		for j := range have[i] {
			if !have[i][j] || scores[i][j] != per[i][j] {
				t.Errorf("re-read [%d][%d] = %v (%v), want %v", i, j, scores[i][j], have[i][j], per[i][j])
			}
		}
	}
	// A rerun trains nothing and warns about nothing.
	*runs, *warnings = 0, nil
	if _, _, err := p.Scores(context.Background(), s); err != nil || *runs != 0 || len(*warnings) != 0 {
		t.Errorf("rerun: %v, %d runs, warnings %q", err, *runs, *warnings)
	}
}

// An append after a partial line written by someone else (not read first)
// still starts on a line of its own.
func TestCacheAppendAfterPartialLine(t *testing.T) {
	p, s, _, warnings := cacheScorer(t)
	fp := p.fingerprint(s)
	writeFile(t, p.Cache, fp+"\n0,0,0.5\n0,1")
	if err := p.appendCache(fp, "1,0,0.75"); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, p.Cache), fp+"\n0,0,0.5\n1,0,0.75\n"; got != want {
		t.Errorf("file %q, want %q", got, want)
	}
	if len(*warnings) != 1 {
		t.Errorf("warnings %q", *warnings)
	}
	// A partial header: the file is cut to nothing and the header rewritten.
	writeFile(t, p.Cache, fp[:20])
	if err := p.appendCache(fp, "1,0,0.75"); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, p.Cache), fp+"\n1,0,0.75\n"; got != want {
		t.Errorf("file %q, want %q", got, want)
	}
}

// An empty existing file gets the header on the first append, and is then
// readable.
func TestCacheEmptyFile(t *testing.T) {
	p, s, _, warnings := cacheScorer(t)
	fp := p.fingerprint(s)
	writeFile(t, p.Cache, "")
	per, have, err := p.readCache(fp, 2)
	if err != nil || len(per) != 2 || have[0][0] {
		t.Fatalf("empty file: %v, %v", err, have)
	}
	if err := p.appendCache(fp, "0,1,0.5"); err != nil {
		t.Fatal(err)
	}
	if got, want := readFile(t, p.Cache), fp+"\n0,1,0.5\n"; got != want {
		t.Fatalf("file %q, want %q", got, want)
	}
	per, have, err = p.readCache(fp, 2)
	if err != nil || !have[0][1] || per[0][1] != 0.5 || have[0][0] || have[1][1] {
		t.Errorf("re-read: %v, %v, %v", err, per, have)
	}
	if len(*warnings) != 0 {
		t.Errorf("warnings %q", *warnings)
	}
	if st, err := os.Stat(p.Cache); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v", st.Mode(), err)
	}
}

// A 200 kB line is an error naming the file and line, not a scanner error.
func TestCacheLongLine(t *testing.T) {
	p, s, _, _ := cacheScorer(t)
	fp := p.fingerprint(s)
	writeFile(t, p.Cache, fp+"\n"+strings.Repeat("1", 200_000)+"\n0,0,0.5\n")
	_, _, err := p.Scores(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), p.Cache) || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "token too long") {
		t.Errorf("200 kB line: %v", err)
	}
}

func TestParseCacheRejects(t *testing.T) {
	const h = cacheHeaderPrefix + "test"
	for _, c := range []struct{ in, want string }{
		{"# NOT PRIVATE, curator only: dptune partition scores: arch=mnist-cnn split=x\n", "line 1: the header does not match"},
		{h + "x\n", "line 1: the header does not match"},
		{h + "\n0,0\n", "line 2: bad record"},
		{h + "\n0,0,0.5,1\n", "line 2: bad record"},
		{h + "\n\n", "line 2: bad record"},
		{h + "\n0,0,0.5\r\n", "line 2: bad record"},
		{h + "\na,0,0.5\n", "line 2: bad record"},
		{h + "\n0,0,0.5\n3,0,0.5\n", "line 3: candidate 3"},
		{h + "\n-1,0,0.5\n", "line 2: candidate index -1 is negative"},
		{h + "\n0,2,0.5\n", "line 2: part 2"},
		{h + "\n0,0,1.5\n", "line 2: accuracy 1.5"},
		{h + "\n0,0,-0.1\n", "line 2: accuracy -0.1"},
		{h + "\n0,0,NaN\n", "line 2: accuracy NaN"},
		{h + "\n0,0,Inf\n", "line 2: accuracy +Inf"},
		{h + "\n0,0,0.5\n1,1,0.5\n0,0,0.25\n", "line 4: candidate 0, part 0 scored 0.25 here and 0.5 before"},
		{h + "\nsearch,{}\n", "line 2: bad search record"},
		{h + "\nsearch,{\"epsilon0\":1,\"granularity\":0.1,\"u0\":0,\"max_iterations\":3,\"epsilon\":3,\"extra\":1}\n", "unknown field"},
		{h + "\nsearch,{\"epsilon0\":1,\"granularity\":0.1,\"u0\":0,\"max_iterations\":3,\"epsilon\":-3}\n", "charged ε"},
		{h + "\nsearch,{\"epsilon0\":1,\"granularity\":0.1,\"u0\":0,\"max_iterations\":3,\"epsilon\":3} x\n", "data after"},
		{h + "\nsearch,{\"epsilon0\":1\n", "line 2: bad search record"},
	} {
		for _, cands := range []int{3, -1} {
			header := h
			if cands < 0 {
				header = ""
			}
			_, _, _, _, _, err := parseCache(strings.NewReader(c.in), "c.csv", header, cands, 2)
			if cands < 0 && (strings.Contains(c.want, "candidate 3") || strings.HasPrefix(c.in, h+"x")) {
				continue // neither the space nor the exact header is known
			}
			if err == nil || !strings.Contains(err.Error(), "c.csv, line") || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%q (cands %d): %v, want an error naming c.csv and containing %q", c.in, cands, err, c.want)
			}
		}
	}
	// The same record twice is harmless.
	scores, have, _, _, _, err := parseCache(strings.NewReader(h+"\n0,0,0.5\n0,0,0.5\n"), "c.csv", h, 3, 2)
	if err != nil || !have[0][0] || scores[0][0] != 0.5 {
		t.Errorf("repeated record: %v", err)
	}
}

// A search record round-trips through the cache, and the cache with search
// lines still serves its scores.
func TestCacheSearchRecords(t *testing.T) {
	p, s, runs, warnings := cacheScorer(t)
	fp := p.fingerprint(s)
	writeFile(t, p.Cache, fp+"\n0,0,0.5\n0,1,0.25\n1,0,0.75\n1,1,1\n")
	rec := SearchRecord{Epsilon0: 0.5, Granularity: 0.05, U0: 0.1, MaxIterations: 7, Epsilon: 3.5000000000000004, Time: "2026-01-02T03:04:05Z"}
	if err := p.RecordSearch(rec); err == nil {
		t.Error("RecordSearch before Scores accepted")
	}
	if got, err := p.Searches(); err != nil || got != nil {
		t.Errorf("no searches yet: %v, %v", got, err)
	}
	if _, _, err := p.Scores(context.Background(), s); err != nil || *runs != 0 {
		t.Fatalf("%v, %d runs", err, *runs)
	}
	if err := p.RecordSearch(rec); err != nil {
		t.Fatal(err)
	}
	noTime := rec
	noTime.Time = ""
	if err := p.RecordSearch(noTime); err != nil {
		t.Fatal(err)
	}
	got, err := p.Searches()
	if err != nil || len(got) != 2 || got[0] != rec || got[1].Time == "" || got[1].Epsilon != rec.Epsilon {
		t.Fatalf("searches %+v, %v", got, err)
	}
	text := readFile(t, p.Cache)
	if n := strings.Count(text, "\nsearch,{"); n != 2 || !strings.HasSuffix(text, "}\n") {
		t.Errorf("file:\n%s", text)
	}
	// A fresh scorer (before Scores) reads them too, and Scores still
	// accepts the file.
	q, _, _, _ := cacheScorer(t)
	q.Cache = p.Cache
	if got, err := q.Searches(); err != nil || len(got) != 2 {
		t.Errorf("before Scores: %+v, %v", got, err)
	}
	if _, _, err := q.Scores(context.Background(), s); err != nil {
		t.Error(err)
	}
	for _, bad := range []SearchRecord{{}, {Epsilon0: 1, Granularity: 1, MaxIterations: 1, Epsilon: 1}, {Epsilon0: 1, Granularity: 0.1, MaxIterations: 1}} {
		if err := p.RecordSearch(bad); err == nil {
			t.Errorf("bad record %+v accepted", bad)
		}
	}
	long := rec
	long.Time = strings.Repeat("x", 5000)
	if err := p.RecordSearch(long); err == nil {
		t.Error("over-long record accepted")
	}
	if after := readFile(t, p.Cache); after != text {
		t.Errorf("rejected records changed the file")
	}
	if len(*warnings) != 0 {
		t.Errorf("warnings %q", *warnings)
	}
	// No cache: nothing recorded, nothing read.
	p.Cache = ""
	if got, err := p.Searches(); err != nil || got != nil || p.RecordSearch(rec) != nil {
		t.Errorf("no cache: %v, %v", got, err)
	}
}

// A tuning's own search (PartitionScorer.Invocation) is not an earlier
// search of its cache: a resumed tuning whose earlier process recorded it
// finds only the other tunings' searches, and recording it again adds no
// line; another tuning still finds it.
func TestCacheOwnSearchIsNotEarlier(t *testing.T) {
	p, s, _, _ := cacheScorer(t)
	writeFile(t, p.Cache, p.fingerprint(s)+"\n0,0,0.5\n0,1,0.25\n1,0,0.75\n1,1,1\n")
	rec := SearchRecord{Epsilon0: 0.5, Granularity: 0.05, U0: 0.1, MaxIterations: 7, Epsilon: 3.5000000000000004, Time: "2026-01-02T03:04:05Z"}
	if _, _, err := p.Scores(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if err := p.RecordSearch(rec); err != nil { // an untagged, earlier search
		t.Fatal(err)
	}
	p.Invocation = "tuning a"
	for range 2 { // the first process, then its resume
		if err := p.RecordSearch(rec); err != nil {
			t.Fatal(err)
		}
		got, err := p.Searches()
		if err != nil || len(got) != 1 || got[0].Tuning != "" {
			t.Fatalf("tuning a's earlier searches: %+v, %v", got, err)
		}
	}
	if n := strings.Count(readFile(t, p.Cache), "\nsearch,{"); n != 2 {
		t.Errorf("%d search lines, want the untagged one and tuning a's once", n)
	}
	p.Invocation = "tuning b"
	if got, err := p.Searches(); err != nil || len(got) != 2 || got[1].Tuning != "tuning a" {
		t.Errorf("tuning b's earlier searches: %+v, %v", got, err)
	}
}

// Scores refuses spaces the DP-SGD part runs cannot train.
func TestScoresChecksSpace(t *testing.T) {
	p, _, _, _ := cacheScorer(t)
	for _, s := range []Space{
		{Name: "neg", Dims: []Dim{{Name: LearningRate, Values: []float64{-1}}, {Name: ClipNorm, Values: []float64{1}}}},
		{Name: "lr only", Dims: []Dim{{Name: LearningRate, Values: []float64{0.1}}}},
		{Name: "unknown", Dims: []Dim{{Name: "lr", Values: []float64{0.1}}, {Name: ClipNorm, Values: []float64{1}}}},
	} {
		if _, _, err := p.Scores(context.Background(), s); err == nil {
			t.Errorf("space %s accepted", s.Name)
		}
	}
	if _, err := os.Stat(p.Cache); err == nil {
		t.Error("a refused space wrote the cache")
	}
}
