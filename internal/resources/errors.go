package resources

import "errors"

// ErrUnresolved means no discovered resource matches a selector.
var ErrUnresolved = errors.New("unresolved resource")

// ErrAmbiguous means a selector matches resources in several groups.
var ErrAmbiguous = errors.New("ambiguous resource")
