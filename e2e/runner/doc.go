// Package runner runs an operator as a separate process for end-to-end
// tests, as Kopf's KopfRunner does for Kopf: it captures the operator's log
// line by line so that tests can wait for a line, count lines (how Kopf's own
// e2e suite checks that each handler succeeded exactly once), stop the
// operator gracefully or kill it outright.
package runner
