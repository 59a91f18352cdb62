package kopfgo_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"sort"
	"strings"
	"testing"
)

var updateSurface = flag.Bool("update", false, "rewrite docs/api-surface.txt from the code")

// surfacePackages are the packages users import: the root and the top-level
// packages of the layout (README.md, Layout). Everything else is internal.
var surfacePackages = []string{".", "handlers", "causes", "diffbase", "persistence", "patch", "hierarchies", "kopfgotest"}

// TestAPISurface keeps the exported names of the public packages in a
// golden file, docs/api-surface.txt, so that every change to the public API
// shows in review as a change to that file. Run with -update to rewrite it
// after a deliberate change.
func TestAPISurface(t *testing.T) {
	var b strings.Builder
	for _, dir := range surfacePackages {
		names, err := exportedNames(dir)
		if err != nil {
			t.Fatal(err)
		}
		pkg := "kopfgo"
		if dir != "." {
			pkg = dir
		}
		fmt.Fprintf(&b, "# %s: %d\n", pkg, len(names))
		for _, n := range names {
			fmt.Fprintf(&b, "%s.%s\n", pkg, n)
		}
		b.WriteString("\n")
	}
	const golden = "docs/api-surface.txt"
	if *updateSurface {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestAPISurface -update . to create it)", err)
	}
	if got := b.String(); got != string(want) {
		t.Errorf("the public API differs from %s; if the change is meant, run\n\tgo test -run TestAPISurface -update .\nand commit the file.\n%s", golden, lineDiff(string(want), got))
	}
}

// exportedNames lists the exported top-level names of the package in dir
// (non-test files) and the exported methods of its exported types, as
// Type.Method; aliases say what they stand for.
func exportedNames(dir string) ([]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if d.Recv == nil {
						names = append(names, d.Name.Name)
						continue
					}
					if recv := receiverName(d.Recv.List[0].Type); ast.IsExported(recv) {
						names = append(names, recv+"."+d.Name.Name)
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							if s.Assign.IsValid() {
								// An alias: its methods are listed where
								// its type is declared.
								var target strings.Builder
								printer.Fprint(&target, fset, s.Type)
								names = append(names, s.Name.Name+" = "+target.String())
								continue
							}
							names = append(names, s.Name.Name)
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									names = append(names, n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

func receiverName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	count := map[string]int{}
	for _, l := range strings.Split(want, "\n") {
		count[l]--
	}
	for _, l := range strings.Split(got, "\n") {
		count[l]++
	}
	var out []string
	for l, n := range count {
		switch {
		case n < 0:
			out = append(out, "-"+l)
		case n > 0:
			out = append(out, "+"+l)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}
