package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/PID/stat: USER_HZ,
// which is 100 on every Linux architecture Go supports.
const clockTick = 10 * time.Millisecond

// cpuTime is the process's CPU time so far, user plus system, of all its
// threads, from /proc/PID/stat.
func cpuTime(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	// After the name: state is field 3, utime field 14, stime field 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc/%d/stat: %q", pid, s)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// peakRSS is the process's peak resident set size (VmHWM) in bytes.
func peakRSS(pid int) (int64, error) { return statusBytes(pid, "VmHWM") }

// currentRSS is the process's resident set size now (VmRSS) in bytes.
func currentRSS(pid int) (int64, error) { return statusBytes(pid, "VmRSS") }

// anonRSS is the part of the resident set that is the process's own
// memory (RssAnon): heap, stacks, the runtime's structures; the rest of
// VmRSS is pages of files, mostly the binary's.
func anonRSS(pid int) (int64, error) { return statusBytes(pid, "RssAnon") }

// statusBytes reads a "NAME: N kB" line of /proc/PID/status.
func statusBytes(pid int, name string) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("unexpected %s line %q", name, sc.Text())
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", name, pid)
}

// machine describes where the benchmark ran, for the report.
type machine struct {
	CPU     string `json:"cpu"`
	Cores   int    `json:"cores"`
	MemGB   int    `json:"memGB"`
	Kernel  string `json:"kernel"`
	Go      string `json:"go"`
	Started string `json:"started"`
	// LoadAverage is the machine's when the run started (1, 5, 15 minutes).
	LoadAverage string `json:"loadAverage"`
}

// loadAverage is the machine's load average over 1, 5 and 15 minutes.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

func describeMachine(cores int, goVersion string) machine {
	m := machine{Cores: cores, Go: goVersion, Started: time.Now().UTC().Format(time.RFC3339), LoadAverage: loadAverage()}
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	if data, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(data))
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				m.MemGB = int((kb + 512*1024) / (1024 * 1024))
			}
		}
	}
	return m
}
