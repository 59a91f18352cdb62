package posting

import "context"

type posterKey struct{}

// WithPoster lets handlers (and anything else the operator runs with ctx)
// post events through p.
func WithPoster(ctx context.Context, p *Poster) context.Context {
	return context.WithValue(ctx, posterKey{}, p)
}

// From returns the poster stored by WithPoster, or nil outside an operator.
func From(ctx context.Context) *Poster {
	p, _ := ctx.Value(posterKey{}).(*Poster)
	return p
}
