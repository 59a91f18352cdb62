package kopfgo_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLayers keeps the import graph pointing down (README.md, Layout): each package
// may import only the kopfgo packages listed for it. A new package must be
// added here, which is the moment to decide where it sits.
func TestLayers(t *testing.T) {
	const m = "github.com/kopfgo/kopfgo"
	leaves := []string{"internal/dicts", "patch", "internal/conventions"}
	allowed := map[string][]string{
		"internal/dicts":       nil,
		"patch":                {"internal/dicts"},
		"internal/conventions": nil,
		"internal/resources":   nil,
		"internal/logging":     nil,
		"internal/cli":         {"internal/logging"},
		"diffbase":             append([]string{"internal/unjson"}, leaves...),
		"persistence":          leaves,
		"internal/causes":      append([]string{"diffbase"}, leaves...),
		"internal/plan":        {"internal/causes"},
		"internal/config":      append([]string{"diffbase", "persistence", "internal/logging", "internal/flowcontrol"}, leaves...),
		"internal/flowcontrol": nil,
		"internal/kube":        append([]string{"internal/flowcontrol", "internal/resources", "internal/unjson", "internal/tracing"}, leaves...),
		"internal/health":      nil,
		"internal/admission":   {"internal/handling", "internal/handlers", "patch", "internal/config", "internal/kube", "internal/resources", "internal/logging", "internal/health", "internal/conventions"},
		"internal/replicas":    append([]string{"internal/kube", "internal/pyrepr", "internal/resources", "internal/unjson"}, leaves...),
		"internal/component":   nil,
		"internal/rbac":        {"internal/resources"},
		"internal/manifests":   {"internal/rbac", "internal/resources"},
		"internal/image":       nil,
		"internal/version":     nil,
		"internal/metrics":     nil,
		"internal/tracing":     nil,
		"internal/inspect":     append([]string{"diffbase", "persistence", "internal/handling"}, leaves...),
		"internal/posting":     {"internal/config", "internal/flowcontrol", "internal/logging", "internal/pyrepr"},
		"hierarchies":          {"internal/objects", "internal/kube"},
		"internal/objects":     {"internal/handlers"},
		"internal/unjson":      nil,
		"internal/testlog":     nil,
		"internal/testmod":     nil,
		"kopfgotest":           {"", "e2e/cluster", "internal/handling", "internal/handlers", "diffbase", "patch", "internal/dicts", "internal/resources", "internal/testlog"},
		"internal/pyrepr":      nil,
		// The facades: the public import paths of engines under internal/,
		// each above its engine only; nothing imports them back.
		"handlers":          {"internal/handlers"},
		"causes":            {"internal/causes"},
		"daemons":           nil,
		"timers":            nil,
		"indexing":          {"internal/indexing"},
		"internal/memlimit": nil,
		"internal/handlers": append([]string{"internal/causes", "diffbase", "internal/resources", "internal/config"}, leaves...),
		"internal/handling": append([]string{"internal/handlers", "internal/causes", "diffbase", "persistence", "internal/resources", "internal/config", "internal/tracing"}, leaves...),
		"internal/indexing": append([]string{"internal/handling", "internal/handlers", "internal/causes", "diffbase", "persistence", "internal/resources", "internal/config"}, leaves...),
		"internal/timers":   nil,
		"internal/daemons":  append([]string{"internal/timers", "internal/handling", "internal/handlers", "internal/config", "internal/resources"}, leaves...),
		"internal/reactor": append([]string{"internal/daemons", "internal/indexing", "internal/handling", "internal/handlers", "internal/causes", "internal/plan", "internal/resources",
			"internal/config", "internal/replicas", "internal/kube", "internal/flowcontrol", "internal/logging", "internal/posting", "internal/pyrepr", "internal/tracing"}, leaves...),
		// For tests only: a fake API behind kube's own clients.
		"internal/kube/kubefake": {"internal/kube"},
		"": {"internal/daemons", "internal/indexing", "internal/handling", "internal/handlers", "internal/causes", "patch", "internal/config", "internal/kube", "internal/flowcontrol", "internal/logging", "internal/reactor", "internal/cli",
			"internal/health", "internal/admission", "internal/posting", "internal/objects", "internal/rbac", "internal/resources", "internal/metrics", "internal/replicas", "internal/component", "internal/memlimit",
			"internal/manifests", "internal/version", "internal/tracing"},
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], m), "/")
		rules, ruled := allowed[pkg]
		if !ruled {
			if !strings.HasPrefix(pkg, "cmd/") && !strings.HasPrefix(pkg, "examples/") && !strings.HasPrefix(pkg, "e2e") {
				t.Errorf("package %q has no layering rule: add it to TestLayers", pkg)
			}
			continue
		}
		for _, imp := range fields[1:] {
			if imp != m && !strings.HasPrefix(imp, m+"/") {
				continue
			}
			dep := strings.TrimPrefix(strings.TrimPrefix(imp, m), "/")
			ok := false
			for _, a := range rules {
				ok = ok || a == dep
			}
			if !ok {
				t.Errorf("%s imports %s, which is not below it", fields[0], imp)
			}
		}
	}
	// The pure packages do no I/O, keep no clock and log nothing: nothing
	// they depend on, directly or not, may; outside the standard library
	// they use only kopfgo and golang.org/x packages.
	for _, pkg := range []string{"internal/causes", "diffbase", "internal/plan"} {
		out, err := exec.Command("go", "list", "-deps", "./"+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps: %v\n%s", err, out)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, f := range []string{"net", "log", "log/slog", "os/exec", "os/signal", "time/tzdata", "k8s.io", "go.uber.org"} {
				if dep == f || strings.HasPrefix(dep, f+"/") {
					t.Errorf("the pure package %s depends on %s", pkg, dep)
				}
			}
			if strings.Contains(strings.SplitN(dep, "/", 2)[0], ".") && !strings.HasPrefix(dep, m+"/") && !strings.HasPrefix(dep, "golang.org/x/") {
				t.Errorf("the pure package %s depends on %s", pkg, dep)
			}
		}
	}
}

// TestOnlyKubeMakesAPIClients keeps internal/kube the only code that calls
// the Kubernetes API (docs/architecture.md, Layout): no other non-test file builds a
// client of client-go (a clientset, a dynamic, discovery or REST client, a
// transport, an informer factory). Others receive what kube builds
// (kube.Client, its Leases, kube.NewClientsets). Exempt: the test cluster's
// harnesses (e2e/, kopfgotest's Cluster), whose clients are the tests',
// and the examples, which are users' programs.
func TestOnlyKubeMakesAPIClients(t *testing.T) {
	exempt := func(path string) bool {
		for _, p := range []string{"internal/kube/", "e2e/", "examples/"} {
			if strings.HasPrefix(path, p) {
				return true
			}
		}
		return path == "kopfgotest/cluster.go"
	}
	makers := regexp.MustCompile(`^(New\w*For(Config|ConfigOrDie|ConfigAndClient)|(Unversioned)?RESTClientFor(ConfigAndClient)?|HTTPClientFor|TransportFor|New\w*SharedInformerFactory\w*|NewListWatchFromClient)$`)
	found := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		path = filepath.ToSlash(path)
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || exempt(path) {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		clientGo := map[string]string{} // local name → import path
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, "k8s.io/client-go/") {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			clientGo[name] = p
		}
		found++
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && clientGo[x.Name] != "" && (makers.MatchString(sel.Sel.Name) || clientGo[x.Name] == "k8s.io/client-go/transport" && sel.Sel.Name == "New") {
				t.Errorf("%s: %s.%s builds an API client outside internal/kube; take it from kube (kube.Client, Client.Leases, kube.NewClientsets)", path, clientGo[x.Name], sel.Sel.Name)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 50 {
		t.Fatalf("only %d files read: the walk missed the module", found)
	}
}
