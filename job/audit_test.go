package job

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dptune/dptune/audit"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// The standing check: for every mechanism dptune ships, a small audit's
// lower bound stays below every claim (ε_L ≤ ε_U). A claim below ε_L is a
// bug that under-reports ε; the audit package's tests show the same audits
// catch a mechanism whose noise is secretly smaller than claimed.
func TestEveryClaimIsAboveItsAudit(t *testing.T) {
	tnb, _ := accounting.TNBWithMean(1, 5)
	for _, s := range []AuditSpec{
		{Protocol: AuditReduced, Trials: 200000, Mu: 1, Repetitions: tnb},
		{Protocol: AuditReduced, Trials: 200000, Mu: 0.5, Repetitions: accounting.BinaryRepetitions(100, 0.01)},
		{Protocol: AuditScore, Trials: 100000, ScoreNoise: 2},
		{Protocol: AuditAboveThreshold, Trials: 100000, AboveThreshold: tuning.CappedSearchConfig{Partitions: 10, Epsilon0: 1, Granularity: 0.05, MaxIterations: 8}},
		{Protocol: AuditDPSGD, Trials: 2000, NoiseMultiplier: 1.5, SamplingRate: 1, ClipNorm: 1, Steps: 2},
		{Protocol: AuditTuner, Trials: 600, NoiseMultiplier: 1.5, SamplingRate: 1, ClipNorm: 1, Steps: 2, Repetitions: accounting.PoissonRepetitions(2)},
		{Protocol: AuditGP, Trials: 400, NoiseMultiplier: 1.5, SamplingRate: 1, ClipNorm: 1, Steps: 2, Repetitions: tnb, GPOptions: tuning.DefaultGPOptions()},
		{Protocol: AuditGrid, Trials: 2000, NoiseMultiplier: 1.5, SamplingRate: 1, ClipNorm: 1, Steps: 2},
	} {
		s.Seed, s.Delta = 3, 1e-5
		res, err := Audit(context.Background(), s)
		if err != nil {
			t.Fatalf("%s: %v", s.Protocol, err)
		}
		if len(res.EpsilonUpper) == 0 {
			t.Fatalf("%s: no claim", s.Protocol)
		}
		t.Logf("%s: %v", s.Protocol, res)
		for name, u := range res.EpsilonUpper {
			if res.EpsilonLower > u+1e-9 {
				t.Errorf("%s: ε_L %.4f above the %s claim %.4f", s.Protocol, res.EpsilonLower, name, u)
			}
		}
		b, _ := json.Marshal(res)
		var m map[string]any
		json.Unmarshal(b, &m)
		keys := 5
		if s.Protocol == AuditDPSGD {
			keys = 7 // and the GDP fit
			if m["epsilon_gdp_estimate"] == nil || m["gdp_mu_estimate"] == nil {
				t.Errorf("%s: no GDP estimate in %s", s.Protocol, b)
			}
		}
		if len(m) != keys || m["epsilon_lower"] == nil || m["epsilon_upper"] == nil || m["trials"] != float64(s.Trials) {
			t.Errorf("%s: audit.json %s", s.Protocol, b)
		}
		if math.IsNaN(res.EpsilonLower) {
			t.Errorf("%s: NaN", s.Protocol)
		}
	}
}

// Params, the trial file's record of an audit, changes with every field
// the protocol's trials depend on (and δ, confidence), not with the fields
// of other protocols, names the protocol first, and refuses non-finite
// numbers by name.
func TestAuditParams(t *testing.T) {
	tnb, _ := accounting.TNBWithMean(1, 5)
	base := AuditSpec{Protocol: AuditReduced, Trials: 100, Mu: 1, Repetitions: tnb, Delta: 1e-5, Confidence: 0.95}
	key := func(s AuditSpec) string {
		ps, err := s.Params()
		if err != nil {
			t.Fatalf("%+v: %v", s, err)
		}
		if ps[0] != (audit.Param{Key: "Protocol", Value: s.Protocol}) {
			t.Errorf("first field %v, want the protocol", ps[0])
		}
		return fmt.Sprint(ps)
	}
	b := key(base)
	for name, change := range map[string]func(*AuditSpec){
		"mu":         func(s *AuditSpec) { s.Mu = 0.2 },
		"gamma":      func(s *AuditSpec) { s.Repetitions.Gamma /= 2 },
		"eta":        func(s *AuditSpec) { s.Repetitions.Eta = 0.5 },
		"delta":      func(s *AuditSpec) { s.Delta = 1e-6 },
		"confidence": func(s *AuditSpec) { s.Confidence = 0.9 },
		"protocol":   func(s *AuditSpec) { s.Protocol = AuditTuner },
	} {
		s := base
		change(&s)
		if key(s) == b {
			t.Errorf("changing %s leaves the params unchanged", name)
		}
	}
	s := base
	s.ScoreNoise, s.Steps, s.Trials, s.Seed = 7, 9, 1000, 5 // not reduced's (trials and seed are audit.Run's)
	if key(s) != b {
		t.Errorf("fields of other protocols changed the params: %s vs %s", key(s), b)
	}
	for _, p := range []string{AuditDPSGD, AuditTuner, AuditGP, AuditGrid, AuditNatural, AuditScore, AuditAboveThreshold} {
		s := base
		s.Protocol = p
		key(s)
	}
	s = base
	s.Mu = math.NaN()
	if _, err := s.Params(); err == nil || !strings.Contains(err.Error(), "Mu") {
		t.Errorf("NaN μ: error %v, want one naming Mu", err)
	}
}

// The tuner audit on data (Xiang et al.'s NTCV): X is the first Size real
// training examples of the network given, the canary sits on its first
// parameter, the claim counts the network's runs, ε_L stays below it, and
// the trial file's header names the data and the network.
func TestTunerAuditOnData(t *testing.T) {
	src := smallMNIST(30)
	s := AuditSpec{Protocol: AuditTuner, Trials: 100, Seed: 2, Delta: 1e-5, Data: src, Size: 10, NoiseMultiplier: 1.5, SamplingRate: 1,
		ClipNorm: 1, Steps: 2, Repetitions: accounting.PoissonRepetitions(2)}
	p, _, err := s.protocol(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tc := p.(audit.TunerCanary)
	if tc.Run.Base == nil || tc.Run.Base.N != 10 || tc.Run.Arch.Name != src.Arch.Name || tc.Run.Arch.Name == audit.CanaryArch.Name {
		t.Fatalf("the canary runs train on %v with %s", tc.Run.Base, tc.Run.Arch.Name)
	}
	res, err := Audit(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if u := res.EpsilonUpper["rdp"]; !(res.EpsilonLower <= u) {
		t.Errorf("ε_L %v above the claim %v", res.EpsilonLower, u)
	}
	withData, _ := s.Params()
	s.Data = Source{}
	without, _ := s.Params()
	if fmt.Sprint(withData) == fmt.Sprint(without) || !strings.Contains(fmt.Sprint(withData), "Arch") {
		t.Errorf("the header does not record the data: %v", withData)
	}
}
