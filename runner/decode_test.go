package runner

import (
	"errors"
	"strings"
	"testing"
)

// DecodeInput is strict: a field the input type does not know (a curator
// newer than the worker), at the top or nested, or anything after the
// value, fails with ErrInvalidInput; an input with only known fields (some
// left out) decodes.
func TestDecodeInputStrict(t *testing.T) {
	type inner struct {
		A int `json:"a"`
	}
	type input struct {
		Clip  float64 `json:"clip_norm"`
		Inner inner   `json:"inner"`
		Seed  *uint64 `json:"seed,omitempty"`
	}
	var in input
	if err := DecodeInput([]byte(`{"clip_norm": 1, "inner": {"a": 2}}`), &in); err != nil || in.Clip != 1 || in.Inner.A != 2 {
		t.Fatalf("known fields: %+v, %v", in, err)
	}
	for name, b := range map[string]string{
		"new top-level field": `{"clip_norm": 1, "clipping": 1}`,
		"new nested field":    `{"inner": {"a": 2, "b": 3}}`,
		"trailing value":      `{"clip_norm": 1} {"clipping": 1}`,
		"malformed":           `{"clip_norm": `,
		"wrong type":          `{"clip_norm": "1"}`,
	} {
		var v input
		err := DecodeInput([]byte(b), &v)
		if !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%s: %v, want ErrInvalidInput", name, err)
		}
		if strings.HasPrefix(name, "new") && (err == nil || !strings.Contains(err.Error(), "unknown field")) {
			t.Errorf("%s: %v does not name the unknown field", name, err)
		}
	}
}
