package job

import (
	"errors"
	"strings"
	"testing"
)

// An account question is refused before any computation with an error
// that wraps ErrInvalid and names the flag at fault; a good one says what
// it solves for.
func TestAccountRequest(t *testing.T) {
	for _, c := range []struct {
		r    AccountRequest
		want string
	}{
		{AccountRequest{Accountant: "rdp", SamplingRate: 2, Delta: 1e-5}, "--sampling-rate 2 is outside (0, 1]"},
		{AccountRequest{Accountant: "rdp", SamplingRate: 0.01, Delta: 1e-5, Given: Given{"gdp-mu": true}}, "--gdp-mu is a --accountant xiang-o|xiang-g option"},
		{AccountRequest{Accountant: "rdp", SamplingRate: 0.01, Delta: 1e-5, NoiseMultiplier: 1, Given: Given{"noise-multiplier": true}}, "give exactly two of"},
		{AccountRequest{Accountant: "rdp", SamplingRate: 0.01, Delta: 1e-5, Given: Given{"steps": true, "epochs": true}}, "give --steps or --epochs, not both"},
		{AccountRequest{Accountant: "pld", SamplingRate: 0.01, Delta: 1e-5, NoiseMultiplier: 1, Steps: 10, Repeat: RepeatSettings{Dist: "poisson", MeanRuns: 3},
			Given: Given{"noise-multiplier": true, "steps": true, "repeat": true, "mean-runs": true}}, "tuning (--repeat) is counted by the rdp accountant only (Papernot & Steinke 2022), not pld"},
		{AccountRequest{Accountant: "rdp", SamplingRate: 0.01, Delta: 1e-5, NoiseMultiplier: 1, Steps: 10, Repeat: RepeatSettings{Dist: "tnb", Eta: 1, MeanRuns: 3},
			AdaptiveRatio: "2", Given: Given{"noise-multiplier": true, "steps": true, "repeat": true, "mean-runs": true, "adaptive-ratio": true}}, `--adaptive-ratio "2" must be C/c`},
		{AccountRequest{Accountant: "xiang-o", Delta: 1e-5, Given: Given{"epsilon": true}}, "--accountant xiang-o computes ε of random-stop tuning"},
	} {
		_, err := c.r.Spec()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q wrapping ErrInvalid", c.r, err, c.want)
		}
	}
	s, err := AccountRequest{Accountant: "rdp", SamplingRate: 0.01, Delta: 1e-5, Epsilon: 3, Epochs: 2, Given: Given{"epsilon": true, "epochs": true}}.Spec()
	if err != nil || s.Solve != "noise_multiplier" || s.Steps != 200 {
		t.Errorf("σ for ε and epochs: %+v, %v", s, err)
	}
}

// An audit's request is refused before any trial with an error that wraps
// ErrInvalid and names the flag at fault.
func TestAuditRequestRefused(t *testing.T) {
	ok := AuditRequest{Protocol: "dpsgd", Trials: 1000, Delta: 1e-5, Confidence: 0.95, NoiseMultiplier: 1, SamplingRate: 1, ClipNorm: 1, Steps: 10, Size: 1, Observe: "all"}
	for _, c := range []struct {
		edit func(*AuditRequest)
		want string
	}{
		{func(r *AuditRequest) { r.Trials = 10 }, "--trials 10 is outside"},
		{func(r *AuditRequest) { r.Confidence = 1 }, "--confidence 1 is outside (0, 1)"},
		{func(r *AuditRequest) { r.Given = Given{"model": true} }, "--model applies to audit natural"},
		{func(r *AuditRequest) { r.Observe = "some" }, `--observe "some" is neither`},
		{func(r *AuditRequest) { r.SamplingRate = 2 }, "--sampling-rate"},
	} {
		r := ok
		c.edit(&r)
		_, err := r.Spec()
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q wrapping ErrInvalid, have %v", c.want, err)
		}
	}
	if _, err := ok.Spec(); err != nil {
		t.Errorf("a good request: %v", err)
	}
}
