// Package patch accumulates the JSON merge patch (RFC 7386) that one handling
// cycle applies to an object.
//
// Handlers write their changes into a Patch instead of calling the API, and
// the framework adds its own (progress records, the diff-base, finalizers,
// results) to the same Patch, so that a cycle costs as few API calls as
// possible: one merge patch of the object and, for resources with a status
// subresource, one of its status.
package patch
