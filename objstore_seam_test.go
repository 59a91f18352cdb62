package kopfgo_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestObjectStoreSeam keeps the reactor and the handling engine on one side
// of internal/objstore (issue 25, item 3): they read and write an object's
// progress records and diff-base only through its Store, so they import
// neither persistence nor diffbase, and never reach for the storages in the
// settings (Persistence.ProgressStorage, Persistence.DiffBaseStorage).
func TestObjectStoreSeam(t *testing.T) {
	const m = "github.com/kopfgo/kopfgo/"
	for _, pkg := range []string{"internal/reactor", "internal/handling"} {
		out, err := exec.Command("go", "list", "-f", `{{range .Imports}}{{.}} {{end}}{{range .GoFiles}}
{{.}}{{end}}`, "./"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		for _, imp := range strings.Fields(lines[0]) {
			if imp == m+"persistence" || imp == m+"diffbase" {
				t.Errorf("%s imports %s: go through internal/objstore's Store", pkg, imp)
			}
		}
		fset := token.NewFileSet()
		for _, name := range lines[1:] {
			path := filepath.Join(pkg, name)
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok && (sel.Sel.Name == "ProgressStorage" || sel.Sel.Name == "DiffBaseStorage") {
					t.Errorf("%s: %s uses the settings' %s: go through internal/objstore's Store", fset.Position(sel.Pos()), pkg, sel.Sel.Name)
				}
				return true
			})
		}
	}
}
