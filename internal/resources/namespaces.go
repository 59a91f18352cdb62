package resources

import (
	"path"
	"strings"
)

// Namespaces is the operator's namespace scope, from -n patterns (compat:
// scope-namespaces). Each pattern is an exact name, or comma-separated globs
// with * and ?, where a leading "!" negates a glob: the rightmost glob that
// matches a namespace decides, and a pattern that starts with a negation
// implies a leading "*". A namespace is served if any pattern matches it.
type Namespaces struct {
	patterns []string
}

// NewNamespaces compiles the -n patterns; none means cluster-wide.
func NewNamespaces(patterns []string) Namespaces { return Namespaces{patterns: patterns} }

// ClusterWide reports whether every namespace is served.
func (n Namespaces) ClusterWide() bool { return len(n.patterns) == 0 }

// Exact returns the namespace names when every pattern is a plain name, so
// that each can be watched on its own; ok is false when globs are involved.
func (n Namespaces) Exact() (names []string, ok bool) {
	if n.ClusterWide() {
		return nil, false
	}
	for _, p := range n.patterns {
		// A backslash escapes in a glob, and globs are trimmed: either
		// makes the name watched differ from the name matched.
		if strings.ContainsAny(p, ",*?![\\") {
			return nil, false
		}
		names = append(names, strings.TrimSpace(p))
	}
	return names, true
}

// Match reports whether the namespace is served.
func (n Namespaces) Match(ns string) bool {
	if n.ClusterWide() {
		return true
	}
	for _, p := range n.patterns {
		if matchPattern(p, ns) {
			return true
		}
	}
	return false
}

// matchPattern follows the manual: the rightmost matching glob wins, and
// the first glob is decisive: a namespace that does not match it does not
// match the pattern at all, unless it is a negation (then everything matches
// initially, as if the pattern began with "*").
func matchPattern(pattern, ns string) bool {
	globs := strings.Split(pattern, ",")
	first := strings.TrimSpace(globs[0])
	result := strings.HasPrefix(first, "!")
	if !result {
		if ok, err := path.Match(first, ns); err != nil || !ok {
			return false
		}
	}
	for _, g := range globs {
		g = strings.TrimSpace(g)
		neg := strings.HasPrefix(g, "!")
		g = strings.TrimPrefix(g, "!")
		if ok, err := path.Match(g, ns); err == nil && ok {
			result = !neg
		}
	}
	return result
}
