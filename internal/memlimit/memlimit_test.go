package memlimit

import (
	"strings"
	"testing"
	"testing/fstest"
)

const (
	v1Mounts = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	v1Cgroups = "4:memory:/pods/app\n1:cpu:/\n0::/\n"
	v2Mounts  = "30 24 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n"
)

func TestLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  int64
		err   string
	}{
		{"no proc", map[string]string{}, 0, ""},
		{"v2, in a cgroup namespace", map[string]string{
			"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": v2Mounts,
			"sys/fs/cgroup/memory.max": "536870912\n",
		}, 512 << 20, ""},
		{"v2, unlimited", map[string]string{
			"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": v2Mounts,
			"sys/fs/cgroup/memory.max": "max\n",
		}, 0, ""},
		{"v2, the parent's limit is lower", map[string]string{
			"proc/self/cgroup": "0::/kubepods/pod1/ctr\n", "proc/self/mountinfo": v2Mounts,
			"sys/fs/cgroup/kubepods/pod1/ctr/memory.max": "max\n",
			"sys/fs/cgroup/kubepods/pod1/memory.max":     "268435456\n",
			"sys/fs/cgroup/kubepods/memory.max":          "1073741824\n",
		}, 256 << 20, ""},
		{"v2, the host's path in a container's mount (no cgroup namespace)", map[string]string{
			"proc/self/cgroup":         "0::/docker/abc\n",
			"proc/self/mountinfo":      "30 24 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			"sys/fs/cgroup/memory.max": "104857600\n",
		}, 100 << 20, ""},
		{"v1, limited", map[string]string{
			"proc/self/cgroup": v1Cgroups, "proc/self/mountinfo": v1Mounts,
			"sys/fs/cgroup/memory/pods/app/memory.limit_in_bytes": "209715200\n",
			"sys/fs/cgroup/memory/pods/memory.limit_in_bytes":     "9223372036854771712\n",
		}, 200 << 20, ""},
		{"v1, unlimited (the kernel's largest value)", map[string]string{
			"proc/self/cgroup": v1Cgroups, "proc/self/mountinfo": v1Mounts,
			"sys/fs/cgroup/memory/pods/app/memory.limit_in_bytes": "9223372036854771712\n",
			"sys/fs/cgroup/memory/memory.limit_in_bytes":          "9223372036854771712\n",
		}, 0, ""},
		{"hybrid: v1 memory limited, v2 without the memory controller", map[string]string{
			"proc/self/cgroup": v1Cgroups, "proc/self/mountinfo": v1Mounts,
			"sys/fs/cgroup/memory/pods/app/memory.limit_in_bytes": "314572800\n",
			"sys/fs/cgroup/unified/cgroup.procs":                  "1\n",
		}, 300 << 20, ""},
		{"a mount path with an escaped space", map[string]string{
			"proc/self/cgroup":            "0::/\n",
			"proc/self/mountinfo":         `30 24 0:26 / /sys/fs/my\040cgroup rw - cgroup2 cgroup2 rw` + "\n",
			"sys/fs/my cgroup/memory.max": "1048576\n",
		}, 1 << 20, ""},
		{"garbage in the limit file", map[string]string{
			"proc/self/cgroup": "0::/\n", "proc/self/mountinfo": v2Mounts,
			"sys/fs/cgroup/memory.max": "lots\n",
		}, 0, `the memory limit in /sys/fs/cgroup/memory.max is "lots"`},
		{"malformed lines are skipped", map[string]string{
			"proc/self/cgroup": "nonsense\n0::/\n", "proc/self/mountinfo": "garbage\n" + v2Mounts,
			"sys/fs/cgroup/memory.max": "2097152",
		}, 2 << 20, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for name, data := range tc.files {
				fsys[name] = &fstest.MapFile{Data: []byte(data)}
			}
			got, err := Limit(fsys)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Limit() error = %v, want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("Limit() = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
