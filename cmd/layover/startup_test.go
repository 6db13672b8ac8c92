package main_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/layoverhq/layover/internal/proctest"
)

// binDir holds the layover binary, built once by TestMain.
var binDir string

func TestMain(m *testing.M) {
	proctest.Main(m, &binDir, false, map[string]string{".": "layover"})
}

const (
	module  = "github.com/layoverhq/layover"
	fakePkg = module + "/internal/fake"
	cliPkg  = module + "/internal/cli"
)

// goPackage is what `go list` says of one package.
type goPackage struct {
	path, dir string
	files     []string // non-test Go files, cgo's included
	deps      map[string]bool
}

// goList lists pattern's packages (with -deps, their dependencies too) that
// belong to this module, run from the module's root.
func goList(t *testing.T, deps bool, pattern string) []goPackage {
	t.Helper()
	args := []string{"list", "-f", "{{.ImportPath}}\t{{.Dir}}\t{{join .GoFiles \" \"}} {{join .CgoFiles \" \"}}\t{{join .Deps \" \"}}"}
	if deps {
		args = append(args, "-deps")
	}
	cmd := exec.Command("go", append(args, pattern)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	var pkgs []goPackage
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimRight(line, "\n"), "\t")
		if len(f) != 4 {
			t.Fatalf("go list printed %q", line)
		}
		if f[0] != module && !strings.HasPrefix(f[0], module+"/") {
			continue
		}
		p := goPackage{path: f[0], dir: f[1], files: strings.Fields(f[2]), deps: map[string]bool{}}
		for _, d := range strings.Fields(f[3]) {
			p.deps[d] = true
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %s listed none of layover's packages", pattern)
	}
	return pkgs
}

// TestFakeOnlyForDemo: no product package but internal/cli links
// internal/fake, and there only the demo imports it; and the binary runs
// none of its code when it starts (package fake has nothing to initialise),
// so `layover pass`, like every other command, does no test work.
func TestFakeOnlyForDemo(t *testing.T) {
	t.Parallel()
	for _, p := range goList(t, false, "./...") {
		switch {
		case p.path == module+"/cmd/layover", p.path == cliPkg,
			p.path == fakePkg, strings.HasPrefix(p.path, fakePkg+"/"):
			continue
		}
		if p.deps[fakePkg] {
			t.Errorf("%s links %s; only the demo (in %s) may", p.path, fakePkg, cliPkg)
		}
	}

	cli := goList(t, false, "./internal/cli")[0]
	var importers []string
	for _, name := range cli.files {
		for _, imp := range imports(t, filepath.Join(cli.dir, name)) {
			if imp == fakePkg || strings.HasPrefix(imp, fakePkg+"/") {
				importers = append(importers, name)
			}
		}
	}
	if len(importers) != 1 || importers[0] != "demo.go" {
		t.Errorf("in %s, %v import %s; only demo.go may", cliPkg, importers, fakePkg)
	}

	// GODEBUG=inittrace=1 prints a line for every package whose
	// initialisation does any work; the command does not matter, all
	// initialisation runs before main.
	cmd := exec.Command(filepath.Join(binDir, "layover"), "help")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("layover help: %v\n%s", err, stderr.Bytes())
	}
	traced := false
	for line := range strings.Lines(stderr.String()) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "init" {
			continue
		}
		traced = true
		if f[1] == fakePkg || strings.HasPrefix(f[1], fakePkg+"/") {
			t.Errorf("layover's start-up initialises %s (a package-level regular expression, map, "+
				"sync.OnceValue or init function?): %s", f[1], strings.TrimSpace(line))
		}
	}
	if !traced {
		t.Fatalf("GODEBUG=inittrace=1 printed no init line:\n%s", stderr.Bytes())
	}
}

// TestNoRegexpCompiledAtInit: no package of layover's that the binary
// links compiles a regular expression, or has an init function, at
// start-up; a package-level expression is compiled on first use
// (sync.OnceValue, or a type like internal/fake's lazyRegexp).
func TestNoRegexpCompiledAtInit(t *testing.T) {
	t.Parallel()
	for _, p := range goList(t, true, "./cmd/layover") {
		for _, name := range p.files {
			path := filepath.Join(p.dir, name)
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil && d.Name.Name == "init" {
						t.Errorf("%s: %s has an init function, run at every layover command's start", path, p.path)
					}
				case *ast.GenDecl:
					if d.Tok != token.VAR {
						continue
					}
					for _, s := range d.Specs {
						for _, v := range s.(*ast.ValueSpec).Values {
							if call := compileOutsideFunc(v); call != "" {
								t.Errorf("%s: package-level %s compiles at every layover command's start; compile it on first use",
									path, call)
							}
						}
					}
				}
			}
		}
	}
}

// compileOutsideFunc returns the regexp compile call (regexp.MustCompile,
// …) expression e makes when it is evaluated, not inside a function
// literal, or "".
func compileOutsideFunc(e ast.Expr) string {
	found := ""
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "regexp" && strings.Contains(n.Sel.Name, "Compile") && found == "" {
				found = "regexp." + n.Sel.Name
			}
		}
		return found == ""
	})
	return found
}

// imports lists the import paths of the Go file at path.
func imports(t *testing.T, path string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range f.Imports {
		p, err := strconv.Unquote(s.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}
