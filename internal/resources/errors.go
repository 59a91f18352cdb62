package resources

import "errors"

// ErrUnresolved means no discovered resource matches a selector.
var ErrUnresolved = errors.New("unresolved resource")

// ErrAmbiguous means a selector matches resources in several groups.
var ErrAmbiguous = errors.New("ambiguous resource")

// ErrUnknownField means a field path names nothing in a resource's schema.
var ErrUnknownField = errors.New("field path not in the resource's schema")
