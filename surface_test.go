package kopfgo_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var updateSurface = flag.Bool("update", false, "rewrite docs/api-surface.txt from the code")

// surfacePackages are the packages users import: the root and the top-level
// packages of the layout (README.md, Layout). Everything else is internal.
var surfacePackages = []string{".", "diffbase", "persistence", "patch", "hierarchies", "kopfgotest", "handlers", "causes", "daemons", "timers", "indexing"}

// facadePackages keep the public import paths of packages whose engine
// moved under internal/ (docs/architecture.md, Layout): like package
// kopfgo, they may alias internal types, which gives those types a public
// name and a doc there.
var facadePackages = map[string]bool{"kopfgo": true, "handlers": true, "causes": true, "daemons": true, "timers": true, "indexing": true}

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

// TestPublicSignaturesNameNoInternalType keeps internal/ below the public
// packages for their users: no exported function, method, field, type or
// variable of a public package names a type of an internal/ or e2e/
// package, which a user could neither import nor read the docs of beside
// the public ones. An internal type reaches users only through an alias in
// package kopfgo (Settings, Index, …) or in a facade package (handlers,
// causes, daemons, timers, indexing), which gives it a public name and a
// doc comment there.
func TestPublicSignaturesNameNoInternalType(t *testing.T) {
	for _, dir := range surfacePackages {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkgs {
			for name, f := range p.Files {
				for _, v := range hiddenTypes(f) {
					t.Errorf("%s: %s", name, v)
				}
			}
		}
	}
}

// hiddenTypes lists the exported declarations of f that name a type of an
// internal or e2e package, except aliases in package kopfgo and the
// facade packages.
func hiddenTypes(f *ast.File) []string {
	hidden := map[string]string{} // local name → import path
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.Contains(path, "/internal/") && !strings.HasSuffix(path, "/internal") && !strings.Contains(path, "/e2e/") {
			continue
		}
		local := filepath.Base(path)
		if imp.Name != nil {
			local = imp.Name.Name
		}
		hidden[local] = path
	}
	var found []string
	check := func(what string, n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && hidden[id.Name] != "" {
					found = append(found, fmt.Sprintf("%s names %s.%s (%s)", what, id.Name, sel.Sel.Name, hidden[id.Name]))
				}
			}
			return true
		})
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() && (d.Recv == nil || ast.IsExported(receiverName(d.Recv.List[0].Type))) {
				check(d.Name.Name, d.Type)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() || s.Assign.IsValid() && facadePackages[f.Name.Name] {
						continue
					}
					for _, part := range exportedParts(s.Type) {
						check(s.Name.Name, part)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() && s.Type != nil {
							check(n.Name, s.Type)
						}
					}
				}
			}
		}
	}
	return found
}

// exportedParts is what users see of a type: of a struct its exported
// fields (embedded ones included), of an interface its exported methods
// and embedded interfaces, else the whole expression.
func exportedParts(e ast.Expr) []ast.Node {
	var fields *ast.FieldList
	switch x := e.(type) {
	case *ast.StructType:
		fields = x.Fields
	case *ast.InterfaceType:
		fields = x.Methods
	default:
		return []ast.Node{e}
	}
	var out []ast.Node
	for _, f := range fields.List {
		if len(f.Names) == 0 {
			if ast.IsExported(receiverName(f.Type)) || isSelector(f.Type) {
				out = append(out, f.Type)
			}
			continue
		}
		for _, n := range f.Names {
			if n.IsExported() {
				out = append(out, f.Type)
				break
			}
		}
	}
	return out
}

func isSelector(e ast.Expr) bool {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	_, ok := e.(*ast.SelectorExpr)
	return ok
}

// exportedNames lists the exported top-level names of the package in dir
// (non-test files) and the exported methods of its exported types, as
// Type.Method; aliases say what they stand for. The methods of an alias to
// an internal type are listed under the alias, since it is the only place
// users meet them.
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
								methods, err := internalMethods(f, s.Type)
								if err != nil {
									return nil, err
								}
								for _, m := range methods {
									names = append(names, s.Name.Name+"."+m)
								}
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

// internalMethods lists the exported methods of the internal type that
// the alias target t (pkg.T or pkg.T[K, V]) in file f names; none for a
// type of a public package, listed there.
func internalMethods(f *ast.File, t ast.Expr) ([]string, error) {
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	sel, ok := t.(*ast.SelectorExpr)
	if !ok {
		return nil, nil
	}
	pkg, _ := sel.X.(*ast.Ident)
	const module = "github.com/kopfgo/kopfgo/"
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		local := filepath.Base(path)
		if imp.Name != nil {
			local = imp.Name.Name
		}
		if pkg == nil || local != pkg.Name || !strings.HasPrefix(path, module+"internal/") {
			continue
		}
		names, err := exportedNames(strings.TrimPrefix(path, module))
		if err != nil {
			return nil, err
		}
		var methods []string
		for _, n := range names {
			if m, ok := strings.CutPrefix(n, sel.Sel.Name+"."); ok {
				methods = append(methods, m)
			}
		}
		return methods, nil
	}
	return nil, nil
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
