package tuning

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParseCache checks that parseCache never panics, that the scores of a
// cache it accepts are accuracies in [0, 1] and its search records valid,
// and that validLen ends at a line boundary.
func FuzzParseCache(f *testing.F) {
	const h = cacheHeaderPrefix + "arch=\"mnist-cnn\" parts=2 candidates=3 settings-sha256=00"
	for _, seed := range []string{
		"",
		h + "\n",
		h + "\n0,0,0.5\n0,1,0.25\n2,1,1\n",
		h + "\n0,0,0.5\n1,1,0.",
		h + "\n0,0,0.5\n0,0,0.25\n",
		h + "\n0,0,1e-3\nsearch,{\"epsilon0\":0.5,\"granularity\":0.05,\"u0\":0,\"max_iterations\":7,\"epsilon\":3.5,\"time\":\"2026-01-02T03:04:05Z\"}\n",
		h + "\nsearch,{\"epsilon0\":0.5}\n",
		h + "\n0,0,NaN\n",
		h + "\n" + strings.Repeat("9", 5000) + "\n",
		"# NOT PRIVATE, curator only: dptune partition scores: arch=mnist-cnn\n0,0,0.5\n",
	} {
		f.Add([]byte(seed), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, strict bool) {
		header, cands := h, 3
		if !strict {
			header, cands = "", -1
		}
		scores, have, searches, valid, _, err := parseCache(bytes.NewReader(b), "fuzz.csv", header, cands, 2)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.csv") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if valid < 0 || valid > int64(len(b)) || valid > 0 && b[valid-1] != '\n' || bytes.IndexByte(b[valid:], '\n') >= 0 {
			t.Fatalf("valid length %d of %q", valid, b)
		}
		for i := range have {
			for j := range have[i] {
				if v := scores[i][j]; !(v >= 0 && v <= 1) || !have[i][j] && v != 0 {
					t.Fatalf("score [%d][%d] = %v (present %v)", i, j, v, have[i][j])
				}
			}
		}
		for _, r := range searches {
			if err := r.check(); err != nil {
				t.Fatalf("accepted search %+v: %v", r, err)
			}
		}
	})
}
