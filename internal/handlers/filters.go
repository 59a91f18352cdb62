package handlers

import (
	"fmt"
)

// Marker is a filter value that checks presence rather than a value.
type Marker int

const (
	// Present matches a label, annotation or field that exists with any
	// value; an empty string counts as present (compat: filters-markers).
	Present Marker = iota + 1
	// Absent matches a label, annotation or field that does not exist.
	Absent
)

func (m Marker) String() string {
	switch m {
	case Present:
		return "Present"
	case Absent:
		return "Absent"
	}
	return fmt.Sprintf("Marker(%d)", int(m))
}
