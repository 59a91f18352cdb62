package handling

import "github.com/kopfgo/kopfgo/internal/dicts"

// getPath reads a field of an essence; a nil essence has no fields.
func getPath(m map[string]any, path []string) (any, bool) {
	if m == nil {
		return nil, false
	}
	return dicts.Get(m, path)
}
