package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The command only builds job specs from flags, shows progress and
// prints: every type and limit it needs comes through job (or bench, model
// for spec loading, runner for the worker), never from the packages that
// implement the privacy, the tuners or DP-SGD.
func TestThinCLI(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"tuning", "dpsgd", "privacy", "audit", "federated", "data"}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			rel, ok := strings.CutPrefix(path, "github.com/dptune/dptune/")
			if !ok {
				continue
			}
			for _, p := range forbidden {
				if rel == p || strings.HasPrefix(rel, p+"/") {
					t.Errorf("%s imports %s: what it needs should come through job", f, path)
				}
			}
		}
	}
}
