package posting

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"
	"unicode/utf8"

	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/config"
	"github.com/kopfgo/kopfgo/internal/flowcontrol"
	"github.com/kopfgo/kopfgo/internal/pyrepr"
)

// Ref identifies the object an event is about: the event's involvedObject.
// Empty fields are left out, as in Kopf: a cluster-scoped object has no
// namespace.
type Ref struct {
	APIVersion string
	Kind       string
	Name       string
	UID        string
	Namespace  string
}

// isEvent reports whether the object is itself a core v1 Event: events about
// events are never posted, or handling events would post events forever.
func (r Ref) isEvent() bool { return r.APIVersion == "v1" && r.Kind == "Event" }

// Client posts one event; *kube.Client is the real one.
type Client interface {
	PostEvent(ctx context.Context, namespace string, body map[string]any) error
}

// Config configures a Poster.
type Config struct {
	Client   Client
	Settings config.Posting // with defaults applied
	// Namespace receives the events about cluster-scoped objects: the
	// default namespace of the operator's credentials. "" is "default".
	Namespace string
	Clock     clock.PassiveClock
	// Logger receives the poster's own warnings. It must not post events.
	Logger *slog.Logger
}

// The limits of posting.
const (
	// MaxMessageLength is the longest message the API accepts; longer ones
	// keep their head and tail around CutInfix (Kopf's truncation).
	MaxMessageLength = 1024
	CutInfix         = "..."
	// maxQueued bounds the memory of events waiting to be posted; beyond it
	// new events are dropped (and counted in a warning).
	maxQueued = 10000
	// requestTimeout bounds one post, so that a hanging API cannot stall
	// the queue for long.
	requestTimeout = 10 * time.Second
	// FlushTimeout bounds the posting of the events still queued when the
	// operator stops, so that the last handlers' events are not lost.
	FlushTimeout = 5 * time.Second
)

// ErrStopped is returned for events posted after the operator has stopped.
var ErrStopped = errors.New("the operator has stopped, so events can no longer be posted")

// Poster queues events and posts them in the background. Its methods are
// safe for concurrent use; they never block on the API.
type Poster struct {
	cfg  Config
	wake chan struct{} // buffered(1): "the queue is not empty"

	mu      sync.Mutex
	queue   []event
	closed  bool
	dropped int
}

type event struct {
	ref                  Ref
	typ, reason, message string
	namespace            string
}

// New returns a poster; nothing is posted until Run runs.
func New(cfg Config) *Poster {
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Poster{cfg: cfg, wake: make(chan struct{}, 1)}
}

// Event posts an event of any type, gated only by Settings.Disabled (Kopf's
// kopf.event checks no level).
func (p *Poster) Event(ref Ref, typ, reason, message string) error {
	if p.cfg.Settings.Disabled {
		return nil
	}
	return p.enqueue(ref, typ, reason, message)
}

// Info posts a "Normal" event if the level lets INFO through.
func (p *Poster) Info(ref Ref, reason, message string) error {
	return p.leveled(slog.LevelInfo, ref, "Normal", reason, message)
}

// Warn posts a "Warning" event if the level lets WARNING through. Unlike
// Kopf's code, and as its documentation says, Disabled gates it too.
func (p *Poster) Warn(ref Ref, reason, message string) error {
	return p.leveled(slog.LevelWarn, ref, "Warning", reason, message)
}

// Exception posts an "Error" event about err if the level lets ERROR
// through. As in Kopf, the reason defaults to the error's type name and the
// message is "<message> <err>".
func (p *Poster) Exception(ref Ref, reason, message string, err error) error {
	if reason == "" {
		reason = TypeName(err)
	}
	switch {
	case message != "" && err != nil:
		message = message + " " + err.Error()
	case err != nil:
		message = err.Error()
	}
	return p.leveled(slog.LevelError, ref, "Error", reason, message)
}

func (p *Poster) leveled(level slog.Level, ref Ref, typ, reason, message string) error {
	if p.cfg.Settings.Disabled || level < p.cfg.Settings.Level {
		return nil
	}
	return p.enqueue(ref, typ, reason, message)
}

// TypeName names an error for an event's reason the way Kopf names an
// exception by its class: the exported name of its type (PermanentError,
// StatusError), or "Error" for the anonymous ones of errors.New and
// fmt.Errorf.
func TypeName(err error) string {
	if err == nil {
		return "Error"
	}
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isExported(t.Name()) {
		return t.Name()
	}
	return "Error"
}

func isExported(name string) bool {
	r, _ := utf8.DecodeRuneInString(name)
	return r >= 'A' && r <= 'Z'
}

func (p *Poster) enqueue(ref Ref, typ, reason, message string) error {
	if ref.isEvent() {
		return nil
	}
	if ref.Name == "" && ref.UID == "" {
		return fmt.Errorf("cannot post an event about an object without a name or uid: %+v", ref)
	}
	if reason == "" {
		return fmt.Errorf("cannot post an event without a reason about %s %s: the API requires one", ref.Kind, ref.Name)
	}
	ns := ref.Namespace
	if ns == "" {
		ns = p.cfg.Namespace
	}
	e := event{ref: ref, typ: typ, reason: reason, message: Truncate(message), namespace: ns}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return ErrStopped
	}
	if len(p.queue) >= maxQueued {
		if p.dropped == 0 {
			p.cfg.Logger.Warn(fmt.Sprintf("Too many events are waiting to be posted (%d); dropping new ones until the queue drains.", maxQueued))
		}
		p.dropped++
		return nil
	}
	p.queue = append(p.queue, e)
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return nil
}

// Truncate cuts a message longer than MaxMessageLength bytes to its head and
// tail joined by CutInfix, as Kopf does (it counts characters; the API
// counts bytes, so kopfgo counts bytes and cuts at rune boundaries).
func Truncate(message string) string {
	if len(message) <= MaxMessageLength {
		return message
	}
	head := MaxMessageLength/2 - len(CutInfix)/2
	tail := MaxMessageLength/2 - (len(CutInfix) - len(CutInfix)/2)
	for head > 0 && !utf8.RuneStart(message[head]) {
		head--
	}
	start := len(message) - tail
	for start < len(message) && !utf8.RuneStart(message[start]) {
		start++
	}
	return message[:head] + CutInfix + message[start:]
}

// Run posts queued events until ctx ends, then posts what is still queued
// within FlushTimeout and refuses new events. Call it once.
func (p *Poster) Run(ctx context.Context) {
	// A post under way when ctx ends is not cut short: its event would be
	// lost, though the flush below has time for it.
	requests := context.WithoutCancel(ctx)
	for {
		select {
		case <-p.wake:
			p.postQueued(ctx.Done(), requests)
		case <-ctx.Done():
			p.mu.Lock()
			p.closed = true
			p.mu.Unlock()
			fctx, cancel := context.WithTimeout(requests, FlushTimeout)
			p.postQueued(fctx.Done(), fctx)
			cancel()
			p.mu.Lock()
			left := len(p.queue)
			p.queue = nil
			p.mu.Unlock()
			if left > 0 {
				p.cfg.Logger.Warn(fmt.Sprintf("%d events were not posted: the operator stopped before the API took them.", left))
			}
			return
		}
	}
}

// postQueued posts the queued events one by one until the queue is empty or
// stop is closed.
func (p *Poster) postQueued(stop <-chan struct{}, requests context.Context) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		p.mu.Lock()
		if len(p.queue) == 0 {
			if p.dropped > 0 {
				p.cfg.Logger.Warn(fmt.Sprintf("%d events were dropped: they came faster than the API took them.", p.dropped))
				p.dropped = 0
			}
			p.queue = nil // let a burst's backing array go
			p.mu.Unlock()
			return
		}
		e := p.queue[0]
		p.queue[0] = event{}
		p.queue = p.queue[1:]
		p.mu.Unlock()
		p.post(requests, e)
	}
}

// timeFormat is how Kopf writes the events' timestamps.
const timeFormat = "2006-01-02T15:04:05.000000Z"

func (p *Poster) post(ctx context.Context, e event) {
	now := p.cfg.Clock.Now().UTC().Format(timeFormat)
	s := p.cfg.Settings
	body := map[string]any{
		"metadata": map[string]any{
			"namespace":    e.namespace,
			"generateName": s.EventNamePrefix,
		},
		"action":             "Action?",
		"type":               e.typ,
		"reason":             e.reason,
		"message":            e.message,
		"reportingComponent": s.ReportingComponent,
		"reportingInstance":  s.ReportingInstance,
		"source":             map[string]any{"component": s.ReportingComponent},
		"involvedObject":     e.ref.involved(e.namespace),
		"firstTimestamp":     now,
		"lastTimestamp":      now,
		"eventTime":          now,
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if err := p.cfg.Client.PostEvent(rctx, e.namespace, body); err != nil {
		// Kopf's line; its middle part names the error as Kopf's does for
		// its error classes, the event's fields are Python reprs.
		// At DEBUG for the API server's trouble: an outage fails every
		// object's events, and the flow control tells it once (compat:
		// log-levels-outage).
		level := slog.LevelWarn
		if flowcontrol.Transient(err) {
			level = slog.LevelDebug
		}
		p.cfg.Logger.Log(ctx, level, fmt.Sprintf("Failed to post an event. Ignoring and continuing. Error: %v. Event: type=%s, reason=%s, message=%s.",
			err, pyrepr.Repr(e.typ), pyrepr.Repr(e.reason), pyrepr.Repr(e.message)))
	}
}

// involved is the event's involvedObject: the reference without its empty
// fields, in the event's namespace (which the API requires to match).
func (r Ref) involved(namespace string) map[string]any {
	m := map[string]any{"namespace": namespace}
	for k, v := range map[string]string{"apiVersion": r.APIVersion, "kind": r.Kind, "name": r.Name, "uid": r.UID} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}
