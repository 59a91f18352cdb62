// Package lifecycle is a test operator for the e2e suite: startup, probe and
// cleanup activities, and a slow handler, steered by environment variables
// so that one binary plays several scenarios.
//
//	KOPFGO_TEST_STARTUP_FAILURES=N  the startup handler fails N times (temporarily)
//	KOPFGO_TEST_STARTUP_PERMANENT=1 the startup handler fails permanently
//	KOPFGO_TEST_UNHEALTHY_FILE=PATH the probe fails while PATH exists
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/kopfgo/kopfgo"
)

func init() {
	kopfgo.On.Startup(startup)
	kopfgo.On.Probe(probe)
	kopfgo.On.Cleanup(cleanup)
	kopfgo.On.Create("kopfexamples", create)
}

func startup(ctx context.Context, a *kopfgo.Activity) error {
	a.Logger.Info(fmt.Sprintf("STARTUP attempt %d", a.Retry))
	if os.Getenv("KOPFGO_TEST_STARTUP_PERMANENT") == "1" {
		return kopfgo.PermanentMsg("the test says no")
	}
	if n, _ := strconv.Atoi(os.Getenv("KOPFGO_TEST_STARTUP_FAILURES")); a.Retry < n {
		return kopfgo.TemporaryMsg("not yet", 500*time.Millisecond)
	}
	a.Settings.Queueing.ExitTimeout = 3 * time.Second
	a.Logger.Info("STARTUP DONE")
	return nil
}

func probe(ctx context.Context, a *kopfgo.Activity) (any, error) {
	if f := os.Getenv("KOPFGO_TEST_UNHEALTHY_FILE"); f != "" {
		if _, err := os.Stat(f); err == nil {
			return nil, errors.New("unhealthy by the test's wish")
		}
	}
	return map[string]any{"healthy": true, "at": time.Now().UnixNano()}, nil
}

func cleanup(ctx context.Context, a *kopfgo.Activity) error {
	a.Logger.Info("CLEANUP RAN")
	return nil
}

// create is slow for objects labelled slow=yes: it waits for its ctx, which
// the operator cancels only when it exits.
func create(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info(fmt.Sprintf("CREATE retry=%d started=%s", c.Retry, c.Started.Format(time.RFC3339Nano)))
	if c.Labels["slow"] != "yes" {
		return nil, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(10 * time.Minute):
		return nil, nil
	}
}
