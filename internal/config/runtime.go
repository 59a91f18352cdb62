package config

import (
	"time"

	"github.com/kopfgo/kopfgo/internal/flowcontrol"
)

// Networking tunes the operator's own API requests (not watches).
type Networking struct {
	// RequestTimeout bounds each request. Default 300s.
	RequestTimeout time.Duration
	// ErrorBackoffs are the pauses between retries of a request that failed
	// with a 5xx or a network error; their count is the number of retries.
	// Default 1,1,2,3,5,8,13,21 seconds (about a minute).
	ErrorBackoffs []time.Duration
	// TrustEnv makes requests honour HTTP(S)_PROXY and NO_PROXY. Default
	// off, as in Kopf (Go's net/http would honour them silently).
	TrustEnv bool
	// FlowControl holds the operator's requests back when the API server
	// is slow, overloaded or gone. Default on (kopfgo's own: compat:
	// flow-control).
	FlowControl FlowControl
}

// FlowControl tunes the operator's gate in front of the API server: an
// adaptive limit of requests in flight, one for writes and one for reads
// (watches are not limited), that grows while the server answers quickly
// and shrinks on 429, 5xx, timeouts and rising latency; Retry-After is
// honoured for everyone; during an outage one request probes the server
// while the others wait.
type FlowControl struct {
	// Disabled sends every request at once, as Kopf does.
	Disabled bool
	// InitialWrites and MaxWrites bound the writes (POST, PUT, PATCH,
	// DELETE) in flight. Default 16 and 32.
	InitialWrites int
	MaxWrites     int
	// InitialReads and MaxReads bound the reads (GET and LIST). Default 16
	// and 32.
	InitialReads int
	MaxReads     int
}

func (f FlowControl) withDefaults() FlowControl {
	w := flowcontrol.Limits{Initial: f.InitialWrites, Max: f.MaxWrites}.WithDefaults()
	r := flowcontrol.Limits{Initial: f.InitialReads, Max: f.MaxReads}.WithDefaults()
	f.InitialWrites, f.MaxWrites, f.InitialReads, f.MaxReads = w.Initial, w.Max, r.Initial, r.Max
	return f
}

func (n Networking) withDefaults() Networking {
	n.FlowControl = n.FlowControl.withDefaults()
	if n.RequestTimeout == 0 {
		n.RequestTimeout = 300 * time.Second
	}
	if len(n.ErrorBackoffs) == 0 {
		for _, s := range []int{1, 1, 2, 3, 5, 8, 13, 21} {
			n.ErrorBackoffs = append(n.ErrorBackoffs, time.Duration(s)*time.Second)
		}
	}
	return n
}

// Scanning controls the discovery of resources and namespaces at runtime.
type Scanning struct {
	// Disabled serves only what exists at startup: CRDs and namespaces that
	// appear later are not watched, and a handler whose resource does not
	// exist fails Run. Default: scanning is on.
	Disabled bool
	// Strict fails Run, each error naming its handler, where the defaults
	// only warn: a resource that does not exist (yet), and a field path
	// (On.Field, a Field filter) that the CRD's schema does not declare.
	// Both say the name they may be a typo of (kopfgo's own: compat:
	// resources-typos).
	Strict bool
	// ReadyWhileUnresolved lets the operator be ready (/readyz) while some
	// registered resource does not exist: by default it is not ready until
	// every one resolves, and /readyz names those that do not (kopfgo's
	// own: compat: resources-typos).
	ReadyWhileUnresolved bool
}

// Process tunes the operator process as a whole.
type Process struct {
	// UltimateExitingTimeout kills the process if it has not exited this long
	// after SIGINT/SIGTERM, so that a hung handler or daemon cannot keep it
	// alive. Default 600s; negative disables.
	UltimateExitingTimeout time.Duration
	// MemoryLimitRatio is the share of the cgroup's memory limit (a
	// container's) that the operator gives Go's garbage collector as its
	// soft limit (runtime/debug.SetMemoryLimit), so that near the limit it
	// collects garbage instead of being killed. It is not applied when
	// GOMEMLIMIT or the program has set a limit already, or when no cgroup
	// limits the memory. Default 0.9; negative disables (kopfgo's own:
	// compat: memory-limit).
	MemoryLimitRatio float64
}

func (p Process) withDefaults() Process {
	if p.UltimateExitingTimeout == 0 {
		p.UltimateExitingTimeout = 600 * time.Second
	}
	if p.MemoryLimitRatio == 0 {
		p.MemoryLimitRatio = 0.9
	}
	return p
}
