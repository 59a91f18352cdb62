//go:build linux && (amd64 || arm64)

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// resident counts the pages of path that are in the page cache.
func resident(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	if _, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

func TestEvictPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "binary")
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i)
	}
	// Just written, like a contender just built: in the page cache, and dirty.
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := resident(t, path); n == 0 {
		t.Skip("the file system does not keep written files in the page cache")
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(path, &fs); err != nil {
		t.Fatal(err)
	}
	// tmpfs and ramfs are the page cache itself: nothing is dropped there
	// (a TMPDIR in memory, as on some CI machines).
	if fs.Type == 0x01021994 || fs.Type == 0x858458f6 {
		t.Skipf("%s is in memory (tmpfs or ramfs): its pages cannot be dropped", path)
	}
	if err := evictPages(path); err != nil {
		t.Fatal(err)
	}
	if n := resident(t, path); n != 0 {
		t.Errorf("%d pages of the file still in the page cache", n)
	}
	if err := evictPages(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("no error for a missing binary")
	}
}
