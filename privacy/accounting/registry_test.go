package accounting

import (
	"slices"
	"strings"
	"testing"
)

// Every accountant people can name is registered under the name its own
// Name method returns, and the lists keep bounds before approximations.
func TestRegistryNames(t *testing.T) {
	if got := Names(false); !slices.Equal(got, []string{"rdp", "pld"}) {
		t.Errorf("Names(false) = %v, want [rdp pld]", got)
	}
	if got := Names(true); !slices.Equal(got, []string{"rdp", "pld", "gdp"}) {
		t.Errorf("Names(true) = %v, want [rdp pld gdp]", got)
	}
	for _, name := range Names(true) {
		acc, err := ByName(name, true)
		if err != nil || acc.Name() != name {
			t.Errorf("ByName(%q) = %v, %v; want the accountant named %q", name, acc, err, name)
		}
	}
	if acc, err := ByName("", false); err != nil || acc.Name() != "rdp" {
		t.Errorf(`ByName("") = %v, %v; want rdp`, acc, err)
	}
}

// Approximations are refused where a bound is needed, and unknown names
// (including the xiang reductions, which no Accountant implements) are
// refused with the list of accepted names.
func TestRegistryRefusals(t *testing.T) {
	for _, c := range []struct {
		name   string
		approx bool
		want   string
	}{
		{"gdp", false, "the gdp accountant is a central-limit approximation, not an upper bound on ε; use rdp or pld here"},
		{"moments", false, `unknown accountant "moments" (want rdp or pld)`},
		{"moments", true, `unknown accountant "moments" (want rdp, pld or gdp)`},
		{"xiang-o", true, `unknown accountant "xiang-o" (want rdp, pld or gdp)`},
	} {
		if _, err := ByName(c.name, c.approx); err == nil || err.Error() != c.want {
			t.Errorf("ByName(%q, %v) = %v, want %q", c.name, c.approx, err, c.want)
		}
	}
}

func TestRegistryDescribe(t *testing.T) {
	for _, c := range []struct {
		name  string
		order float64
		want  string
	}{
		{"rdp", 12, "rdp accountant, order 12"},
		{"rdp", 0, "rdp accountant"},
		{"pld", 0, "pld accountant, upper bound"},
		{"gdp", 0, "gdp accountant: central-limit approximation, not a bound"},
		{"xiang-g", 0, "xiang-g: Xiang et al.'s Algorithm 3, an APPROXIMATION, not a proved bound"},
		{"basic", 0, "basic accountant"},
	} {
		if got := Describe(c.name, c.order); got != c.want {
			t.Errorf("Describe(%q, %g) = %q, want %q", c.name, c.order, got, c.want)
		}
	}
	if h := Help(true); !strings.HasPrefix(h, "rdp, pld (") || !strings.Contains(h, " or gdp (") {
		t.Errorf("Help(true) = %q, want rdp, pld (…) or gdp (…)", h)
	}
	defer func() {
		if recover() == nil {
			t.Error("registering rdp twice did not panic")
		}
	}()
	Register(Named{Name: "rdp"})
}
