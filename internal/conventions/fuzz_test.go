package conventions

import (
	"strings"
	"testing"
)

// Keys are formed from handler ids (sub-handler ids carry the parent's id
// and any user-given suffix) and a prefix: the name part must stay within
// Kubernetes' 63 characters whatever the id, or every write of the object
// is rejected.
func FuzzKeys(f *testing.F) {
	for _, s := range []string{"create", "a/b/c", "<lambda>", strings.Repeat("x", 64), strings.Repeat("é", 40), ""} {
		f.Add(s, "kopf.zalando.org")
		f.Add(s, "my-operator.example.com.with.a.longer.prefix")
	}
	f.Fuzz(func(t *testing.T, name, prefix string) {
		if strings.Contains(prefix, "/") || len(prefix) > MaxPrefixLength {
			return // prefixes are validated as settings
		}
		for _, key := range (Keys{Prefix: prefix, V1: true}).Make(name) {
			_, part, _ := strings.Cut(key, "/")
			if prefix == "" {
				part = key
			}
			if len(part) > MaxNameLength {
				t.Fatalf("%q under %q: name part %q is %d characters", name, prefix, part, len(part))
			}
			if strings.Contains(part, "/") {
				t.Fatalf("%q under %q: name part %q has a slash", name, prefix, part)
			}
		}
	})
}
