package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// inner are the packages that implement the privacy, the tuners, the
// audits and DP-SGD: the command never imports them for their logic. Every
// job (train, tune, account, audit, the vote, a benchmark) goes through job
// or bench, which check, plan, reserve and release.
var inner = []string{"tuning", "dpsgd", "privacy", "audit", "federated", "data"}

// vocabulary is what the command may take straight from an inner package:
// names, defaults, limits, help strings and the types it prints, no privacy
// logic. A package mapped to nil is a leaf of vocabulary as a whole
// (tuning/space: the search-space types, importing nothing of the project
// but text checks); any other is open only for the names listed, so that
// the command may name the vote or print a budget's report, but cannot
// train (dpsgd.Train), compute an ε (accounting, budget) or run a tuner
// (tuning) without job. A name that is not vocabulary stays behind job's
// front door: budget.Load, say, is job.LoadBudget, since loading a budget
// file checks a ledger. Adding a name here is a design decision: it must be
// a const, a type, or a function returning a help string.
var vocabulary = map[string][]string{
	"tuning/space": nil,
	// The default tuner, the vote's name, how a tuning subset's settings
	// carry over, and the registries' names for flag help.
	"tuning": {"Default", "VoteName", "SubsampleRule", "NamesList", "SpacesList"},
	// The largest μ of Xiang et al.'s reduced game, and the accountants'
	// names for flag help.
	"privacy/accounting": {"MaxGaussianSelectMu", "Help"},
	// What `dptune budget show` prints.
	"privacy/budget": {"Report", "Reserved", "PLDNote"},
	// Automatic clipping's default γ; the run Train resolved, as it reports it.
	"dpsgd": {"DefaultAutoClipGamma", "Config"},
	// A vote client's limits and their defaults; the server's progress.
	"federated": {"DefaultMaxEpsilon", "DefaultMaxDelta", "Limits", "Event"},
	// An audit's limits, for its flags' help, and the registered protocols
	// (their names, help and bounds), which `dptune audit` lists.
	"audit": {"MaxTrials", "MaxCanarySize", "MaxCanaryClipNorm", "MinCanarySamplingRate", "Games", "Game"},
	// The score audit's largest σ, for its flag's help.
	"privacy/noise": {"MaxDiscreteSigma"},
	// The registered datasets' names, for flag help.
	"data": {"NamesList", "Names"},
}

// The command only builds job specs from flags, shows progress and prints:
// what it needs of the inner packages comes through job (or bench, model
// for spec loading, runner for the worker), except the vocabulary above.
func TestThinCLI(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, msg := range thinViolations(file) {
			t.Errorf("%s: %s", f, msg)
		}
	}
}

// thinViolations lists file's imports of inner packages that are not
// vocabulary, and its uses of a vocabulary package's names not listed.
func thinViolations(file *ast.File) []string {
	var out []string
	names := map[string][]string{} // local package name → names it may use
	for _, imp := range file.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		rel, ok := strings.CutPrefix(path, "github.com/dptune/dptune/")
		if !ok || !slices.ContainsFunc(inner, func(p string) bool { return rel == p || strings.HasPrefix(rel, p+"/") }) {
			continue
		}
		allowed, ok := vocabulary[rel]
		switch {
		case !ok:
			out = append(out, "imports "+path+": what it needs should come through job")
		case allowed == nil:
		case imp.Name != nil && (imp.Name.Name == "." || imp.Name.Name == "_"):
			out = append(out, "imports "+path+" as "+imp.Name.Name+": name its vocabulary package-qualified")
		default:
			local := filepath.Base(rel)
			if imp.Name != nil {
				local = imp.Name.Name
			}
			names[local] = allowed
		}
	}
	if len(names) == 0 {
		return out
	}
	ast.Inspect(file, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		// A package name is unresolved in the file's scopes; a local
		// variable of the same name is not.
		if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil {
			if allowed, ok := names[x.Name]; ok && !slices.Contains(allowed, sel.Sel.Name) {
				out = append(out, "uses "+x.Name+"."+sel.Sel.Name+": not vocabulary, it should come through job")
			}
		}
		return true
	})
	return out
}

// TestThinCLIRefuses keeps TestThinCLI able to fail: logic of an inner
// package, or an inner package outside the vocabulary, is refused.
func TestThinCLIRefuses(t *testing.T) {
	for _, c := range []struct {
		src  string
		want []string
	}{
		{`import "github.com/dptune/dptune/dpsgd"; var _ = dpsgd.Train`, []string{"uses dpsgd.Train"}},
		{`import acc "github.com/dptune/dptune/privacy/accounting"; var _, _ = acc.Help, acc.ByName`, []string{"uses acc.ByName"}},
		{`import "github.com/dptune/dptune/privacy/noise"; var _, _ = noise.MaxDiscreteSigma, noise.Gaussian`, []string{"uses noise.Gaussian"}},
		{`import "github.com/dptune/dptune/audit"; var _, _ = audit.MaxTrials, audit.Audit`, []string{"uses audit.Audit"}},
		{`import "github.com/dptune/dptune/privacy/budget/x"`, []string{"imports github.com/dptune/dptune/privacy/budget/x"}},
		{`import "github.com/dptune/dptune/data"; var _, _ = data.NamesList, data.Load`, []string{"uses data.Load"}},
		{`import "github.com/dptune/dptune/data/x"`, []string{"imports github.com/dptune/dptune/data/x"}},
		{`import . "github.com/dptune/dptune/tuning"`, []string{"imports github.com/dptune/dptune/tuning as ."}},
		{`import "github.com/dptune/dptune/tuning"; func f(tuning struct{ Lookup int }) int { return tuning.Lookup }; var _ = tuning.VoteName`, nil},
		{`import "github.com/dptune/dptune/tuning/space"; var _ = space.Parse`, nil},
	} {
		file, err := parser.ParseFile(token.NewFileSet(), "x.go", "package main\n"+c.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		got := thinViolations(file)
		if len(got) != len(c.want) {
			t.Errorf("%s: %q, want %d violations", c.src, got, len(c.want))
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) {
				t.Errorf("%s: %q, want %q", c.src, got[i], c.want[i])
			}
		}
	}
}
