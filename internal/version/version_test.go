package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	goTail := " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
	released := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, true
	}
	devel := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}, true
	}
	operator := func() (*debug.BuildInfo, bool) {
		return &debug.BuildInfo{Main: debug.Module{Path: "example.com/op", Version: "(devel)"},
			Deps: []*debug.Module{{Path: "github.com/kopfgo/kopfgo", Version: "v0.3.0"}}}, true
	}
	none := func() (*debug.BuildInfo, bool) { return nil, false }
	for _, tt := range []struct {
		name            string
		stamped, commit string
		bi              func() (*debug.BuildInfo, bool)
		want            string
	}{
		{"released", "", "", released, "kopfgo version v1.2.3" + goTail},
		{"devel with VCS", "", "", devel, "kopfgo version (devel 0123456789ab+dirty)" + goTail},
		{"no build info", "", "", none, "kopfgo version (devel)" + goTail},
		{"stamped", "v2.0.0", "fedcba9876543210", devel, "kopfgo version v2.0.0 (fedcba987654)" + goTail},
		{"stamped commit only", "", "fedcba9876543210", none, "kopfgo version (devel fedcba987654)" + goTail},
		{"an operator", "v1.0.0", "", operator, "kopfgo version v1.0.0 kopfgo v0.3.0" + goTail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := read(tt.stamped, tt.commit, tt.bi).String("kopfgo"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLinkerFlags(t *testing.T) {
	if got := LinkerFlags("", ""); len(got) != 0 {
		t.Errorf("nothing to stamp: got %q", got)
	}
	got := strings.Join(LinkerFlags("v1", "abc"), " ")
	if got != "-X "+Package+".stamped=v1 -X "+Package+".commit=abc" {
		t.Errorf("got %q", got)
	}
}
