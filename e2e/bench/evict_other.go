//go:build !linux || !(amd64 || arm64)

package main

// evictPages is a no-op where the bench does not know the fadvise system
// call's number: contenders start with whatever the page cache holds.
func evictPages(string) error { return nil }
