package kopfgo_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestObjectStoreSeam keeps the reactor and the handling engine on one side
// of the object's store (issue 25, item 3): they read and write an object's
// progress records and diff-base only through internal/handling's Store
// (store.go), so no other file of theirs imports persistence or diffbase,
// and none reaches for the storages in the settings
// (Persistence.ProgressStorage, Persistence.DiffBaseStorage).
func TestObjectStoreSeam(t *testing.T) {
	const m = "github.com/kopfgo/kopfgo/"
	store := filepath.Join("internal/handling", "store.go")
	for _, pkg := range []string{"internal/reactor", "internal/handling"} {
		out, err := exec.Command("go", "list", "-f", `{{range .GoFiles}}{{.}}
{{end}}`, "./"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		fset := token.NewFileSet()
		for _, name := range strings.Fields(string(out)) {
			path := filepath.Join(pkg, name)
			if path == store {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly|parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == m+"persistence" || p == m+"diffbase" {
					t.Errorf("%s imports %s: go through internal/handling's Store", path, p)
				}
			}
			if f, err = parser.ParseFile(fset, path, nil, 0); err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "ProgressStorage" || sel.Sel.Name == "DiffBaseStorage") {
					t.Errorf("%s: %s uses the settings' %s: go through internal/handling's Store", fset.Position(sel.Pos()), pkg, sel.Sel.Name)
				}
				return true
			})
		}
	}
}
