package kopfgo

import "github.com/kopfgo/kopfgo/patch"

// Patch is a JSON merge patch being built: what handlers write into
// (Object.Patch) instead of calling the API, and what custom progress and
// diff-base storages (persistence.Storage, diffbase.Storage) write their
// records into. The framework sends it after the handler returns, one merge
// patch per object (plus one of the status subresource when there is one).
type Patch = patch.Patch
