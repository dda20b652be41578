package archtest

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dptune/dptune/data"
	_ "github.com/dptune/dptune/job" // every package that may register a name
	"github.com/dptune/dptune/model"
	"github.com/dptune/dptune/privacy/accounting"
	"github.com/dptune/dptune/tuning"
)

// registered is every registered name, with its kind.
func registered() map[string]string {
	kinds := map[string][]string{
		"layer":      model.LayerTypes(),
		"tuner":      tuning.Names(),
		"accountant": accounting.AllNames(),
		"dataset":    data.Names(),
	}
	names := map[string]string{}
	for kind, ns := range kinds {
		for _, n := range ns {
			if k, dup := names[n]; dup {
				names[n] = k + " and " + kind
			} else {
				names[n] = kind
			}
		}
	}
	return names
}

// ownFile reports whether the file at p (slash-separated) is named after
// name: its base name's words (split at "_") hold the name's words (split
// at "-") in a row, as model/layer_conv2d.go, dpsgd/layer_conv2d.go,
// dpsgd/layer_groupnorm_linear.go (a rule of two kinds), tuning/doubling.go,
// bench/doubling.go (its benchmark), job/vote.go or data/fashion_mnist.go.
func ownFile(p, name string) bool {
	words := strings.Split(strings.TrimSuffix(path.Base(p), ".go"), "_")
	want := strings.Split(name, "-")
	for i := 0; i+len(want) <= len(words); i++ {
		if slices.Equal(words[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

// allowed are the files that name a registered name without being named
// after it, and why each may. Each entry must still be needed: the test
// fails when a listed file no longer names a listed name.
var allowed = []struct {
	file  string
	names []string
	why   string
}{
	{"tuning/builtin.go", []string{"randomstop", "gp", "doubling", "grid", "recommended"}, "registers the built-in tuners and lists the benchmarks' line-up"},
	{"tuning/gptuner.go", []string{"gp"}, "the GP tuner's file (tuning/gp.go is its Gaussian process)"},
	{"privacy/accounting/xiang.go", []string{"xiang-o", "xiang-g"}, "registers Xiang et al.'s reductions"},
	{"privacy/accounting/registry.go", []string{"rdp"}, "the registry's default, for an empty name"},
	{"privacy/accounting/event.go", []string{"vote"}, "the Vote event's JSON type, not the tuner"},
	{"audit/tuner.go", []string{"randomstop", "gp", "grid"}, "each tuner audit plays one named tuner"},
	{"job/audit.go", []string{"gp", "grid"}, "the gp and grid audits' names, which are the tuners'"},
	{"bench/audit_tables.go", []string{"gp", "grid"}, "the gp and grid audits' names, which are the tuners'"},
	{"bench/tuners.go", []string{"randomstop", "gp", "grid"}, "the papers' claims compare named tuners; DP-HyPO's simulation runs gp against random-stop"},
}

// debt are files that name a registered name though nothing should switch
// on it there: names the code used before the registries, each to go as its
// file learns to ask the registry or a capability instead. The list only
// shrinks: the test fails when a listed file no longer names a listed name.
var debt = map[string][]string{
	// The audits' claims and their tables, by accountant name.
	"audit/dpsgd.go":        {"pld", "rdp"},
	"audit/mechanisms.go":   {"rdp"},
	"audit/natural.go":      {"pld", "rdp"},
	"audit/reduced.go":      {"rdp", "xiang-o"},
	"audit/registry.go":     {"pld", "rdp", "xiang-o"},
	"audit/tuner.go":        {"pld", "rdp", "xiang-o"},
	"bench/audit.go":        {"xiang-g", "xiang-o"},
	"bench/audit_plot.go":   {"pld", "rdp", "xiang-o"},
	"bench/audit_tables.go": {"pld", "rdp", "xiang-o"},
	"cmd/dptune/audit.go":   {"mnist", "pld", "rdp", "xiang-o"},
	// The default accountant, and Xiang et al.'s approximation, by name.
	"bench/compare.go":      {"xiang-o"},
	"cmd/dptune/account.go": {"rdp"},
	"cmd/dptune/train.go":   {"rdp"},
	"cmd/dptune/tune.go":    {"rdp"},
	"job/account.go":        {"xiang-g", "xiang-o"},
	"job/export.go":         {"xiang-o"},
	"job/partitioned.go":    {"rdp"},
	"job/tune_plan.go":      {"rdp"},
	"job/tune_run.go":       {"rdp"},
	"job/vote.go":           {"rdp"},
	"tuning/doubling.go":    {"rdp"},
	"tuning/randomstop.go":  {"rdp", "xiang-o"},
	// The default dataset, and datasets' published settings, by name.
	"bench/report_answer.go":     {"cifar10", "recommended"},
	"bench/report_sections.go":   {"cifar10", "mnist"},
	"bench/scatter.go":           {"cifar10", "mnist"},
	"cmd/dptune/bench.go":        {"mnist"},
	"cmd/dptune/bench_tuners.go": {"mnist"},
	"cmd/dptune/datasets.go":     {"mnist"},
	"cmd/dptune/eval.go":         {"mnist"},
	"cmd/dptune/tune_vote.go":    {"mnist"},
	"job/source.go":              {"cifar10", "mnist"},
	"job/train.go":               {"cifar10", "fashion-mnist", "mnist"},
	// Tuners: random-stop's default weight, bench compare's --vote.
	"bench/compare_wide.go":       {"randomstop"},
	"cmd/dptune/bench_compare.go": {"vote"},
}

// Names a registry knows — a layer kind, a tuner, an accountant, a dataset
// — appear only in their own files: adding one is one file (per side, for a
// layer) plus its test, and nothing else switches on its name. A file names
// a name when its code (comments aside) holds a string literal equal to the
// name, or an identifier of a constant whose value is the name (directly or
// through other such constants; a constant whose name begins with Default
// names a role, not its current value). A name's own files are those named
// after it (ownFile); the few others that may name it are in allowed, each
// with its reason, and the files that still do though they should not are
// in debt. Test files are not read: they may name anything.
func TestNamesConfined(t *testing.T) {
	names := registered()
	found, err := namings(filepath.Join("..", ".."), names)
	if err != nil {
		t.Fatal(err)
	}
	ok := map[string]map[string]bool{} // file → names it may name
	listed := func(file string, ns []string) {
		if ok[file] == nil {
			ok[file] = map[string]bool{}
		}
		for _, n := range ns {
			if names[n] == "" {
				t.Errorf("%s is listed for %q, which no registry knows", file, n)
			}
			if !slices.Contains(found[file], n) {
				t.Errorf("%s no longer names %q: remove it from the list", file, n)
			}
			ok[file][n] = true
		}
	}
	for _, a := range allowed {
		listed(a.file, a.names)
	}
	for file, ns := range debt {
		listed(file, ns)
	}
	for _, file := range slices.Sorted(maps.Keys(found)) {
		for _, n := range found[file] {
			if !ownFile(file, n) && !ok[file][n] {
				t.Errorf("%s names the %s %q: only its own files may (ask the registry or a capability instead)", file, names[n], n)
			}
		}
	}
}

// The test fails for a new file that names a registered name, by a string
// literal or by a constant of another package, and passes for one that
// asks the registry; comments, struct fields and the name's own file do
// not count.
func TestNamingsFindsANewFile(t *testing.T) {
	root := t.TempDir()
	write := func(p, src string) {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n\ngo 1.26\n")
	write("tuning/doubling.go", "package tuning\n\nconst DoublingName = \"doubling\"\n\nconst Alias = DoublingName\n\nconst DefaultTuner = DoublingName\n")
	write("bench/lit.go", "package bench\n\nfunc f(n string) bool { return n == \"doubling\" }\n")
	write("bench/konst.go", "package bench\n\nimport \"example.com/m/tuning\"\n\nvar x = tuning.DoublingName\n")
	write("bench/alias.go", "package bench\n\nimport t \"example.com/m/tuning\"\n\nvar y = t.Alias\n")
	write("bench/role.go", "package bench\n\nimport \"example.com/m/tuning\"\n\n// \"doubling\" in a comment\nvar z = tuning.DefaultTuner\n\ntype s struct{ DoublingName int }\n\nvar w = s{DoublingName: 1}\n")
	write("bench/doubling.go", "package bench\n\nvar own = \"doubling\"\n")
	write("bench/lit_test.go", "package bench\n\nvar inTest = \"doubling\"\n")
	write("bench/testdata/x.go", "package x\n\nvar inData = \"doubling\"\n")
	found, err := namings(root, map[string]string{"doubling": "tuner"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, file := range slices.Sorted(maps.Keys(found)) {
		if !ownFile(file, "doubling") {
			got = append(got, file)
		}
	}
	if want := []string{"bench/alias.go", "bench/konst.go", "bench/lit.go"}; !slices.Equal(got, want) {
		t.Errorf("files naming doubling outside its own: %v, want %v (all: %v)", got, want, found)
	}
}

// goFile is one parsed non-test file: its slash path relative to the
// module root, its directory (the package), and its imports by local
// name.
type goFile struct {
	path, dir string
	ast       *ast.File
	imports   map[string]string // local name → directory in the module
}

// namings returns the registered names each non-test, non-generated Go
// file of the module at root names (see TestNamesConfined), by the file's
// slash path relative to root. It skips testdata, out and bin directories,
// hidden ones and nested modules.
func namings(root string, names map[string]string) (map[string][]string, error) {
	module, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var files []*goFile
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			base := d.Name()
			if p != root && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata" || base == "out" || base == "bin" || base == "vendor") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(p, "go.mod")); p != root && err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if ast.IsGenerated(f) {
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		g := &goFile{path: rel, dir: path.Dir(rel), ast: f, imports: map[string]string{}}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			dir, ok := strings.CutPrefix(ip, module+"/")
			if !ok {
				continue
			}
			local := path.Base(dir)
			if imp.Name != nil {
				local = imp.Name.Name
			}
			g.imports[local] = dir
		}
		files = append(files, g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	consts := nameConstants(files, names)
	found := map[string][]string{}
	for _, g := range files {
		seen := map[string]bool{}
		inspectNames(g, consts, names, seen)
		for n := range seen {
			found[g.path] = append(found[g.path], n)
		}
		slices.Sort(found[g.path])
	}
	return found, nil
}

// modulePath reads the module path from a go.mod file.
func modulePath(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	return "", fmt.Errorf("%s: no module line", gomod)
}

// nameConstants finds the package-level constants whose value is a
// registered name, by directory and identifier: those given a literal, and
// those given another such constant (unless their own name begins with
// Default: a role, like tuning.Default, not a name).
func nameConstants(files []*goFile, names map[string]string) map[string]map[string]string {
	consts := map[string]map[string]string{}
	for changed := true; changed; {
		changed = false
		for _, g := range files {
			for _, decl := range g.ast.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					if len(vs.Values) != len(vs.Names) {
						continue
					}
					for i, id := range vs.Names {
						if consts[g.dir][id.Name] != "" {
							continue
						}
						n := constName(g, vs.Values[i], consts, names)
						if n == "" || (strings.HasPrefix(id.Name, "Default") && !isStringLit(vs.Values[i])) {
							continue
						}
						if consts[g.dir] == nil {
							consts[g.dir] = map[string]string{}
						}
						consts[g.dir][id.Name] = n
						changed = true
					}
				}
			}
		}
	}
	return consts
}

func isStringLit(e ast.Expr) bool {
	lit, ok := e.(*ast.BasicLit)
	return ok && lit.Kind == token.STRING
}

// constName is the registered name the expression e of file g denotes —
// a string literal or a known name constant — or "".
func constName(g *goFile, e ast.Expr, consts map[string]map[string]string, names map[string]string) string {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			if s, err := strconv.Unquote(e.Value); err == nil && names[s] != "" {
				return s
			}
		}
	case *ast.Ident:
		return consts[g.dir][e.Name]
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok {
			if dir, ok := g.imports[x.Name]; ok {
				return consts[dir][e.Sel.Name]
			}
		}
	case *ast.ParenExpr:
		return constName(g, e.X, consts, names)
	}
	return ""
}

// inspectNames adds to seen the names file g names: string literals, and
// name constants used as values (not an identifier that declares
// something, a field selected from a value, or a struct literal's key).
func inspectNames(g *goFile, consts map[string]map[string]string, names map[string]string, seen map[string]bool) {
	skip := map[*ast.Ident]bool{}
	ast.Inspect(g.ast, func(node ast.Node) bool {
		switch n := node.(type) {
		case *ast.ImportSpec:
			return false
		case *ast.Field:
			for _, id := range n.Names {
				skip[id] = true
			}
			// The tag is a string literal, never only a name.
		case *ast.FuncDecl:
			skip[n.Name] = true
		case *ast.TypeSpec:
			skip[n.Name] = true
		case *ast.ValueSpec:
			for _, id := range n.Names {
				skip[id] = true
			}
		case *ast.LabeledStmt:
			skip[n.Label] = true
		case *ast.BranchStmt:
			if n.Label != nil {
				skip[n.Label] = true
			}
		case *ast.CompositeLit:
			if _, isMap := n.Type.(*ast.MapType); !isMap {
				for _, elt := range n.Elts {
					if kv, ok := elt.(*ast.KeyValueExpr); ok {
						if id, ok := kv.Key.(*ast.Ident); ok {
							skip[id] = true
						}
					}
				}
			}
		case *ast.SelectorExpr:
			if n := constName(g, n, consts, names); n != "" {
				seen[n] = true
				return false
			}
			skip[n.Sel] = true
		case *ast.BasicLit:
			if n := constName(g, n, consts, names); n != "" {
				seen[n] = true
			}
		case *ast.Ident:
			if !skip[n] {
				if n := constName(g, n, consts, names); n != "" {
					seen[n] = true
				}
			}
		}
		return true
	})
}
