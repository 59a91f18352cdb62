//go:build linux && (amd64 || arm64)

package main

import (
	"fmt"
	"os"
	"syscall"
)

// fadvDontNeed is POSIX_FADV_DONTNEED on Linux.
const fadvDontNeed = 4

// evictPages drops a contender's binary from the page cache before it
// starts, so that its file-backed pages are read in as from a fresh image,
// the same way for every contender and every build.
//
// Why: an idle contender's RSS is about four fifths pages of its binary
// (RssFile: 33 of 40 MB for kopfgo, 25 of 30 MB for the floor; see "An
// idle operator's memory" in docs/performance.md), and how many of them a
// process maps depends on how they came into the page cache (just written
// by go build, or read from disk). Two builds that initialise the same
// packages, their sections within 10 KB of each other, measured warm 3 MB
// apart (25.7 and 28.6 MB, the same after every restart); cold, 0.4 MB.
// The pages are synced first: dirty pages (a fresh build) are not
// dropped. Pages that a running process maps (another replica of the
// scale-out scenario) stay, as they would in a node's page cache.
func evictPages(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	// A file that cannot be synced (a read-only file system: EROFS,
	// EINVAL) has no dirty pages to sync.
	_ = f.Sync()
	if _, _, errno := syscall.Syscall6(syscall.SYS_FADVISE64, f.Fd(), 0, 0, fadvDontNeed, 0, 0); errno != 0 {
		return fmt.Errorf("dropping %s from the page cache: %w", path, errno)
	}
	return nil
}
