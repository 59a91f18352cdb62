package resources

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Resource is a resource as discovered in the cluster: what a handler
// actually serves, as opposed to the selector it was registered with.
type Resource struct {
	Group      string
	Version    string
	Plural     string
	Singular   string
	Kind       string
	ShortNames []string
	Categories []string
	Namespaced bool
	Preferred  bool
	// Subresources lists the resource's subresources, e.g. "status".
	Subresources []string
	Verbs        []string
}

// GVR is the client-go identity of the resource.
func (r Resource) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Plural}
}

// APIVersion is "group/version", or "version" for the core group.
func (r Resource) APIVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// HasStatus reports whether status is a subresource, which changes how the
// status part of a patch must be sent.
func (r Resource) HasStatus() bool { return slices.Contains(r.Subresources, "status") }

// String renders the resource as kubectl does: plural.version.group.
func (r Resource) String() string {
	if r.Group == "" {
		return r.Plural + "." + r.Version
	}
	return r.Plural + "." + r.Version + "." + r.Group
}

// Selector picks resources by group, version and one name that may be a
// plural, singular, kind or short name, as Kopf's positional selectors do.
type Selector struct {
	Group   string // "" with GroupSet means the core group
	Version string // "" means the group's preferred version
	Name    string
	// GroupSet distinguishes the core group ("") from "any group".
	GroupSet bool
}

var versionRE = regexp.MustCompile(`^v\d+(?:(?:alpha|beta)\d+)?$`)

// Parse reads a selector in one of Kopf's forms, folded into one string:
//
//	kopfexamples                 any group, preferred version
//	KopfExample, kex             a kind or a short name, likewise
//	kopfexamples.kopf.dev        kubectl style: name.group
//	pods.v1, jobs.v1.batch       name.version[.group]
//	kopf.dev/v1/kopfexamples     group/version/name
//	v1/pods                      core group: version/name
func Parse(s string) (Selector, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Selector{}, fmt.Errorf("empty resource: name it by plural, kind, short name, plural.group or group/version/plural")
	}
	if strings.ContainsFunc(s, unicode.IsSpace) {
		// No resource name has a space; one kept would make a selector
		// that never resolves, reported only as "unresolved".
		return Selector{}, fmt.Errorf("resource %q contains whitespace: name it by plural, kind, short name, plural.group or group/version/plural", s)
	}
	if strings.Contains(s, "/") {
		parts := strings.Split(s, "/")
		for _, p := range parts {
			if p == "" {
				return Selector{}, fmt.Errorf("resource %q has an empty part: use group/version/plural or version/plural", s)
			}
		}
		switch len(parts) {
		case 2:
			if !versionRE.MatchString(parts[0]) {
				return Selector{}, fmt.Errorf("resource %q: %q is not a version; use group/version/plural, e.g. kopf.dev/v1/kopfexamples", s, parts[0])
			}
			return Selector{Version: parts[0], Name: parts[1], GroupSet: true}, nil
		case 3:
			return Selector{Group: parts[0], Version: parts[1], Name: parts[2], GroupSet: true}, nil
		default:
			return Selector{}, fmt.Errorf("resource %q has too many parts: use group/version/plural", s)
		}
	}
	name, rest, dotted := strings.Cut(s, ".")
	if !dotted {
		return Selector{Name: s}, nil
	}
	if name == "" || rest == "" {
		return Selector{}, fmt.Errorf("resource %q has an empty part: use plural.group, e.g. kopfexamples.kopf.dev", s)
	}
	first, group, _ := strings.Cut(rest, ".")
	if versionRE.MatchString(first) {
		return Selector{Group: group, Version: first, Name: name, GroupSet: true}, nil
	}
	return Selector{Group: rest, Name: name, GroupSet: true}, nil
}

// String renders the selector in the form Parse reads.
func (s Selector) String() string {
	switch {
	case s.GroupSet && s.Version != "" && s.Group != "":
		return s.Group + "/" + s.Version + "/" + s.Name
	case s.GroupSet && s.Version != "":
		return s.Version + "/" + s.Name
	case s.GroupSet:
		return s.Name + "." + s.Group
	default:
		return s.Name
	}
}

// Matches reports whether the selector names the resource. Without a version,
// only the preferred version matches (compat: resources-preferred).
func (s Selector) Matches(r Resource) bool {
	if s.GroupSet && s.Group != r.Group {
		return false
	}
	if s.Version != "" {
		if s.Version != r.Version {
			return false
		}
	} else if !r.Preferred {
		return false
	}
	return s.Name == r.Plural || s.Name == r.Singular || s.Name == r.Kind || slices.Contains(r.ShortNames, s.Name)
}

// Select resolves the selector among discovered resources. A name matching
// resources of several groups is ambiguous and not served, except that the
// core group wins as in kubectl (compat: resources-ambiguous).
func (s Selector) Select(all []Resource) ([]Resource, error) {
	var found []Resource
	for _, r := range all {
		if s.Matches(r) {
			found = append(found, r)
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%w: %s (create its CRD, or check the name with kubectl api-resources)", ErrUnresolved, s)
	}
	groups := map[string]bool{}
	for _, r := range found {
		groups[r.Group] = true
	}
	if len(groups) > 1 && !s.GroupSet {
		if groups[""] {
			return slices.DeleteFunc(found, func(r Resource) bool { return r.Group != "" }), nil
		}
		var names []string
		for _, r := range found {
			names = append(names, r.String())
		}
		slices.Sort(names)
		return nil, fmt.Errorf("%w: %s matches %s (specify the API group, e.g. %s.%s)",
			ErrAmbiguous, s, strings.Join(names, ", "), s.Name, found[0].Group)
	}
	return found, nil
}
