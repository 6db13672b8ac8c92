package fuzzbound

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unbounded are the fuzz targets known to run without Run, by file: their
// packages' owners add it. Every other fuzz target must call Run.
var unbounded = map[string]bool{}

// TestEveryFuzzTargetIsBounded checks that the body of every fuzz target in
// the module (a Fuzz call given a function of a *testing.T) calls
// fuzzbound.Run, so that a new target cannot forget the time bound.
func TestEveryFuzzTargetIsBounded(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root %s: %v", root, err)
	}
	targets := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			return nil
		}
		ast.Inspect(file, func(n ast.Node) bool {
			body, ok := fuzzBody(n)
			if !ok {
				return true
			}
			targets++
			if !callsRun(body) && !unbounded[filepath.ToSlash(rel)] {
				t.Errorf("%s: a fuzz target whose body does not call fuzzbound.Run (every fuzz input has a time bound)", fset.Position(n.Pos()))
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if targets == 0 {
		t.Fatal("found no fuzz target in the module")
	}
}

// fuzzBody returns the body of the function n passes to a Fuzz method, when
// n is such a call: X.Fuzz(func(t *testing.T, …) {…}).
func fuzzBody(n ast.Node) (*ast.BlockStmt, bool) {
	call, ok := n.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return nil, false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Fuzz" {
		return nil, false
	}
	lit, ok := call.Args[0].(*ast.FuncLit)
	if !ok || len(lit.Type.Params.List) == 0 {
		return nil, false
	}
	star, ok := lit.Type.Params.List[0].Type.(*ast.StarExpr)
	if !ok {
		return nil, false
	}
	if typ, ok := star.X.(*ast.SelectorExpr); !ok || typ.Sel.Name != "T" {
		return nil, false
	}
	return lit.Body, true
}

// callsRun reports whether body calls fuzzbound.Run.
func callsRun(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Run" {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "fuzzbound" {
					found = true
				}
			}
		}
		return !found
	})
	return found
}
