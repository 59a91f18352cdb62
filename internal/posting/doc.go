// Package posting posts Kubernetes Events about objects, as Kopf's posting
// engine does (compat: events): calls queue events without blocking, from
// any goroutine, and one background goroutine per operator posts them as
// core v1 Events in Kopf's shape. Posting is best-effort: a failed post is
// logged as a warning and never fails a handler.
//
// It exists apart from the reactor because events come from two directions
// that must share one queue and one set of gates (settings.posting): the
// explicit kopfgo.Event/Info/Warn/Exception calls of handlers, which reach
// the poster through their ctx, and the per-object loggers when logger
// posting is on.
package posting
