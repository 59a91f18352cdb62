// Package retrying is a test operator for the e2e suite: h1 succeeds at
// once, h2 fails temporarily (3s delay) until its third attempt, so that a
// test can kill the operator while h2 waits between retries.
package retrying

import (
	"context"
	"fmt"
	"time"

	"github.com/kopfgo/kopfgo"
)

func init() {
	kopfgo.On.Create("kopfexamples", h1, kopfgo.ID("h1"))
	kopfgo.On.Create("kopfexamples", h2, kopfgo.ID("h2"))
}

func h1(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info("H1 CALLED")
	return nil, nil
}

func h2(ctx context.Context, c *kopfgo.Change) (any, error) {
	c.Logger.Info(fmt.Sprintf("H2 CALLED retry=%d started=%s", c.Retry, c.Started.Format(time.RFC3339Nano)))
	if c.Retry < 2 {
		return nil, kopfgo.TemporaryMsg("not yet", 3*time.Second)
	}
	return "done", nil
}
