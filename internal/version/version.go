package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set by the linker: -X github.com/kopfgo/kopfgo/internal/version.stamped=V
// and ...version.commit=C (kopfgo build's --version, the checkout's commit).
var stamped, commit string

// Package is this package's import path, the prefix of the -X flags.
const Package = "github.com/kopfgo/kopfgo/internal/version"

// LinkerFlags are the -ldflags -X settings that stamp version and commit
// into a binary that links this package; empty values stamp nothing.
func LinkerFlags(version, commit string) []string {
	var out []string
	if version != "" {
		out = append(out, "-X", Package+".stamped="+version)
	}
	if commit != "" {
		out = append(out, "-X", Package+".commit="+commit)
	}
	return out
}

// Info is a build's identity.
type Info struct {
	// Version: the stamp, the main module's version, or "(devel)".
	Version string
	// Revision: the commit, "" if unknown; Modified: the checkout had
	// uncommitted changes (known only from the go command's record).
	Revision string
	Modified bool
	// Kopfgo is the version of the kopfgo module linked in, when the main
	// module is another one (an operator's).
	Kopfgo string
}

// Current is the running binary's Info.
func Current() Info { return read(stamped, commit, debug.ReadBuildInfo) }

func read(stamped, commit string, buildInfo func() (*debug.BuildInfo, bool)) Info {
	info := Info{Version: "(devel)"}
	bi, ok := buildInfo()
	if ok {
		if bi.Main.Version != "" {
			info.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Revision = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
		for _, d := range bi.Deps {
			if d.Path == "github.com/kopfgo/kopfgo" {
				info.Kopfgo = d.Version
				if d.Replace != nil && d.Replace.Version != "" {
					info.Kopfgo = d.Replace.Version
				}
			}
		}
	}
	if stamped != "" {
		info.Version = stamped
	}
	if commit != "" {
		info.Revision, info.Modified = commit, false
	}
	return info
}

// String is "NAME version V go1.x os/arch" as `go version` prints it; an
// unreleased build shows its commit: "(devel 0123456789ab+dirty)".
func (i Info) String(name string) string {
	v := i.Version
	if v == "(devel)" && i.Revision != "" {
		dirty := ""
		if i.Modified {
			dirty = "+dirty"
		}
		v = fmt.Sprintf("(devel %.12s%s)", i.Revision, dirty)
	} else if i.Revision != "" {
		v += fmt.Sprintf(" (%.12s)", i.Revision)
	}
	if i.Kopfgo != "" {
		v += " kopfgo " + i.Kopfgo
	}
	return fmt.Sprintf("%s version %s %s %s/%s", name, v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
