package job

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A labelling's request is refused before any image is read; a list of
// paths is read an entry at a time, empty entries skipped, counted first
// only when it is a regular file.
func TestPredictRequest(t *testing.T) {
	for _, c := range []struct {
		r    PredictRequest
		want string
	}{
		{PredictRequest{}, "--model DIR is required"},
		{PredictRequest{Model: "m", FilesFrom: "l", Paths: []string{"a"}}, "give PATHs or --files-from, not both"},
		{PredictRequest{Model: "m", Null: true}, "--null describes --files-from's list"},
		{PredictRequest{Model: "m"}, "give one or more image files or directories"},
		{PredictRequest{Model: "m", FilesFrom: filepath.Join(t.TempDir(), "none")}, "--files-from: "},
	} {
		if _, err := c.r.Config(); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q wrapping ErrInvalid", c.r, err, c.want)
		}
	}
	list := filepath.Join(t.TempDir(), "list")
	if err := os.WriteFile(list, []byte("a\x00\x00b c\x00d"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := PredictRequest{Model: "m", FilesFrom: list, Null: true}.Config()
	if err != nil || !c.Count {
		t.Fatalf("a list file: %+v, %v", c, err)
	}
	var got []string
	for p, err := range c.Paths {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
	}
	if !slices.Equal(got, []string{"a", "b c", "d"}) {
		t.Errorf("listed paths %q", got)
	}
	c, err = PredictRequest{Model: "m", FilesFrom: "-", Stdin: strings.NewReader("x\n\ny\n")}.Config()
	if err != nil || c.Count {
		t.Fatalf("standard input: %+v, %v", c, err)
	}
}

// A client's share is i/n with 1 ≤ i ≤ n and 2 ≤ n ≤ 255, or none.
func TestParsePart(t *testing.T) {
	if i, n, err := parsePart("2/5"); i != 2 || n != 5 || err != nil {
		t.Errorf("2/5: %d/%d, %v", i, n, err)
	}
	if i, n, err := parsePart(""); i != 0 || n != 0 || err != nil {
		t.Errorf("none: %d/%d, %v", i, n, err)
	}
	for _, s := range []string{"0/3", "4/3", "two", "1/1", "1/256"} {
		if _, _, err := parsePart(s); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v", s, err)
		}
	}
}
