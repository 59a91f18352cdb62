package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
)

// registerFunc is the name of the function through which a package
// registers its handlers on the operator it is given: the generated main
// calls it on the default operator.
const registerFunc = "Register"

// findRegister tells whether the package p declares
// func Register(r kopfgo.Registrar), which the generated main calls. It
// reads the package's files (those go list selected for this build) with
// go/parser, without type-checking, since the generated main must be
// written before anything is compiled. A Register that takes kopfgo's
// types in another shape is an error: its author meant it to be called.
func findRegister(p pkg) (bool, error) {
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		path := filepath.Join(p.Dir, name)
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return false, err
		}
		kopfgoName := importName(f, kopfgoImportPath)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != registerFunc {
				continue
			}
			if kopfgoName != "" && isRegisterSignature(fn.Type, kopfgoName) {
				return true, nil
			}
			if kopfgoName != "" && mentions(fn.Type, kopfgoName) {
				return false, fmt.Errorf("%s: func %s%s: kopfgo calls a package's Register only as func Register(r kopfgo.Registrar); change its signature to that",
					fset.Position(fn.Pos()), registerFunc, signature(fset, fn.Type))
			}
		}
	}
	return false, nil
}

// importName is the name under which f imports path, or "" when it does
// not (or only for its side effects, or into the file's scope with ".").
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if p, err := strconv.Unquote(imp.Path.Value); err != nil || p != path {
			continue
		}
		if imp.Name == nil {
			return "kopfgo" // the package's own name
		}
		if n := imp.Name.Name; n != "_" && n != "." {
			return n
		}
	}
	return ""
}

// isRegisterSignature: one parameter of type <kopfgo>.Registrar, no
// results, no type parameters.
func isRegisterSignature(t *ast.FuncType, kopfgoName string) bool {
	if t.TypeParams != nil || t.Results != nil || t.Params == nil || len(t.Params.List) != 1 {
		return false
	}
	field := t.Params.List[0]
	if len(field.Names) > 1 {
		return false
	}
	sel, ok := field.Type.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Registrar" {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == kopfgoName
}

// mentions tells whether the signature names anything of the package
// imported as name.
func mentions(t *ast.FuncType, name string) bool {
	found := false
	ast.Inspect(t, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == name {
				found = true
			}
		}
		return !found
	})
	return found
}

// signature prints the function's parameters and results as written.
func signature(fset *token.FileSet, t *ast.FuncType) string {
	var b strings.Builder
	if err := printer.Fprint(&b, fset, t); err != nil {
		return "(…)"
	}
	return strings.TrimPrefix(b.String(), "func")
}
