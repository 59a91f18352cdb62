package resources

import (
	"slices"
	"strings"
)

// Suggest returns the selector, in the form it was written, that the user
// most likely meant when s resolves to nothing: the nearest by edit
// distance among the plural, singular, kind and short names of the
// discovered resources (the group too, when one was given). "" when none is
// near enough to be a typo.
func (s Selector) Suggest(all []Resource) string {
	written := s.String()
	var candidates []string
	for _, r := range all {
		if s.Version != "" && s.Version != r.Version || s.Version == "" && !r.Preferred {
			continue
		}
		for _, name := range append([]string{r.Plural, r.Singular, r.Kind}, r.ShortNames...) {
			if name == "" {
				continue
			}
			c := Selector{Group: r.Group, Version: s.Version, Name: name, GroupSet: s.GroupSet}.String()
			if c != written {
				candidates = append(candidates, c)
			}
		}
	}
	best, _ := closest(written, candidates)
	return best
}

// closest returns the candidate nearest to word by edit distance, ignoring
// case, if it is near enough to be a typo of it: a third of the word's
// length, at least 1 and at most 3 edits. Ties go to the one nearer with
// case, then to the first: callers list candidates in order of preference.
func closest(word string, candidates []string) (string, bool) {
	limit := min(max(len(word)/3, 1), 3)
	best, bestD, bestExact := "", limit+1, 0
	lw := strings.ToLower(word)
	for _, c := range candidates {
		d := distance(lw, strings.ToLower(c))
		if d > bestD {
			continue
		}
		exact := distance(word, c)
		if d < bestD || exact < bestExact {
			best, bestD, bestExact = c, d, exact
		}
	}
	return best, bestD <= limit
}

// distance is the edit distance of a and b in bytes (names of resources
// and fields are ASCII): insertions, deletions, substitutions and swaps of
// neighbours, the usual typos, count one each.
func distance(a, b string) int {
	// Three rows of the table: i-2, i-1 and i.
	rows := [3][]int{make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(a); i++ {
		prev2, prev, cur := rows[0], rows[1], rows[2]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		rows[0], rows[1], rows[2] = prev, cur, prev2
	}
	return rows[1][len(b)]
}

// sortedKeys are a schema's property names, sorted, so that ties among
// suggestions do not depend on the map's order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
