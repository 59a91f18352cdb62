// Package patch accumulates the JSON merge patch (RFC 7386) that one handling
// cycle applies to an object. It is public because handlers write into a
// Patch (kopfgo.Patch, Object.Patch) and custom progress and diff-base
// storages (persistence.Storage, diffbase.Storage) write their records into
// one; it sits at the bottom of the layers, so that every package can take it.
//
// Handlers write their changes into a Patch instead of calling the API, and
// the framework adds its own (progress records, the diff-base, finalizers,
// results) to the same Patch, so that a cycle costs as few API calls as
// possible: one merge patch of the object and, for resources with a status
// subresource, one of its status.
package patch
