package kopfgotest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// A user's test names only kopfgotest's types and public kopfgo packages:
// no exported function, method or type of the kit has e2e/... or
// internal/... in its signature or fields (issue 25).
func TestSignaturesNameNoHarnessOrInternalType(t *testing.T) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range pkgs {
		for name, f := range pkg.Files {
			hidden := map[string]string{} // local name → import path
			for _, imp := range f.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if !strings.Contains(path, "/e2e/") && !strings.Contains(path, "/internal/") {
					continue
				}
				local := filepath.Base(path)
				if imp.Name != nil {
					local = imp.Name.Name
				}
				hidden[local] = path
			}
			check := func(what string, n ast.Node) {
				if n == nil {
					return
				}
				ast.Inspect(n, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && hidden[id.Name] != "" {
							t.Errorf("%s: %s names %s.%s (%s)", name, what, id.Name, sel.Sel.Name, hidden[id.Name])
						}
					}
					return true
				})
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Name.IsExported() {
						check(d.Name.Name, d.Type)
					}
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						switch s := spec.(type) {
						case *ast.TypeSpec:
							if s.Name.IsExported() {
								check(s.Name.Name, exportedPart(s.Type))
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									check(n.Name, s.Type)
								}
							}
						}
					}
				}
			}
		}
	}
}

// exportedPart is a type's expression with unexported struct fields left out.
func exportedPart(e ast.Expr) ast.Expr {
	st, ok := e.(*ast.StructType)
	if !ok {
		return e
	}
	out := &ast.StructType{Fields: &ast.FieldList{}}
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			if n.IsExported() {
				out.Fields.List = append(out.Fields.List, f)
				break
			}
		}
	}
	return out
}
