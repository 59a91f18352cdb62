package memlimit

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
)

// unlimitedV1 is where cgroup v1 limits start to mean "none": the kernel
// reports an unset limit as the largest page-aligned int64.
const unlimitedV1 = math.MaxInt64 / 2

// Limit is the lowest memory limit, in bytes, of the process's cgroups (v2
// and v1) and their ancestors, read from root (the file system's "/"); 0
// when no cgroup limits the process's memory. An error says which file
// could not be understood.
func Limit(root fs.FS) (int64, error) {
	cgroups, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil // not Linux, or no /proc: nothing to respect
		}
		return 0, fmt.Errorf("reading the process's cgroups: %w", err)
	}
	mountinfo, err := fs.ReadFile(root, "proc/self/mountinfo")
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, nil
		}
		return 0, fmt.Errorf("reading the process's mounts: %w", err)
	}
	var lowest int64
	for _, c := range parseCgroups(cgroups) {
		for _, m := range parseMounts(mountinfo) {
			if !m.serves(c) {
				continue
			}
			limit, err := m.limit(root, c.path)
			if err != nil {
				return 0, err
			}
			if limit > 0 && (lowest == 0 || limit < lowest) {
				lowest = limit
			}
		}
	}
	return lowest, nil
}

// cgroup is a line of /proc/self/cgroup: "0::/path" for v2,
// "4:memory:/path" for v1's memory controller.
type cgroup struct {
	v2   bool
	path string
}

func parseCgroups(data []byte) []cgroup {
	var out []cgroup
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		id, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		controllers, p, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		switch {
		case id == "0" && controllers == "":
			out = append(out, cgroup{v2: true, path: p})
		case contains(controllers, "memory"):
			out = append(out, cgroup{path: p})
		}
	}
	return out
}

// mount is a cgroup file system in /proc/self/mountinfo: its root within
// the hierarchy and where it is mounted.
type mount struct {
	v2         bool
	root, path string
}

func parseMounts(data []byte) []mount {
	var out []mount
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		before, after, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(before), strings.Fields(after)
		if len(f) < 5 || len(g) < 1 {
			continue
		}
		m := mount{root: unescape(f[3]), path: unescape(f[4])}
		switch {
		case g[0] == "cgroup2":
			m.v2 = true
		case g[0] == "cgroup" && len(g) >= 3 && contains(g[2], "memory"):
		default:
			continue
		}
		out = append(out, m)
	}
	return out
}

func (m mount) serves(c cgroup) bool { return m.v2 == c.v2 }

// limit walks from the cgroup's directory up to the mount's root and
// returns the lowest limit on the way; 0 for none.
func (m mount) limit(root fs.FS, cgroupPath string) (int64, error) {
	dir := m.path
	// Within a cgroup namespace the process's path is relative to the
	// mount's root; without one, a container's mount root is its own
	// cgroup and the path names it from the host's root.
	if rel, ok := strings.CutPrefix(cgroupPath, m.root); ok && (m.root == "/" || rel == "" || strings.HasPrefix(rel, "/")) {
		dir = path.Join(m.path, rel)
	}
	file := "memory.limit_in_bytes"
	if m.v2 {
		file = "memory.max"
	}
	var lowest int64
	for {
		limit, err := readLimit(root, path.Join(dir, file), m.v2)
		if err != nil {
			return 0, err
		}
		if limit > 0 && (lowest == 0 || limit < lowest) {
			lowest = limit
		}
		if dir == m.path || !strings.HasPrefix(dir, m.path) {
			return lowest, nil
		}
		dir = path.Dir(dir)
	}
}

// readLimit reads one limit file; a missing file (a controller not enabled
// there, the root cgroup) or "max" is no limit.
func readLimit(root fs.FS, name string, v2 bool) (int64, error) {
	data, err := fs.ReadFile(root, strings.TrimPrefix(name, "/"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the memory limit: %w", err)
	}
	s := strings.TrimSpace(string(data))
	if v2 && s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("the memory limit in /%s is %q, not a number of bytes", strings.TrimPrefix(name, "/"), s)
	}
	if !v2 && n >= unlimitedV1 {
		return 0, nil
	}
	return n, nil
}

func contains(list, item string) bool {
	for _, s := range strings.Split(list, ",") {
		if s == item {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes of spaces, tabs, newlines and
// backslashes in paths.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
