package reactor

import (
	"context"
	"sync"

	"github.com/kopfgo/kopfgo/internal/posting"
)

// startPosting starts the operator's event poster (unless cfg has one) and
// puts it into ctx, so that handlers can post events and object loggers can
// tee into it. stop lets the poster post what is still queued, then joins
// it: call it after the handlers have finished, so their last events go out.
func startPosting(ctx context.Context, cfg *Config, client posting.Client) (_ context.Context, stop func()) {
	if cfg.Poster == nil {
		cfg.Poster = posting.New(posting.Config{
			Client:    client,
			Settings:  cfg.Settings.Posting,
			Namespace: cfg.DefaultNamespace,
			Clock:     cfg.Clock,
			Logger:    cfg.Logger,
		})
	}
	p := cfg.Poster
	// The poster outlives ctx: it stops only when stop is called.
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { p.Run(pctx) })
	return posting.WithPoster(ctx, p), func() {
		cancel()
		wg.Wait()
	}
}
