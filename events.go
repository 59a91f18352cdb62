package kopfgo

import (
	"context"
	"errors"
	"fmt"

	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/objects"
	"github.com/kopfgo/kopfgo/internal/posting"
)

// ErrNoOperator is returned by Event, Info, Warn and Exception when ctx does
// not come from a running operator: pass the ctx your handler received.
var ErrNoOperator = errors.New("no operator in this context: post events with the ctx a handler received (or one derived from it)")

// Event posts a Kubernetes Event of any type about obj (Kopf's kopf.event;
// compat: events-post): a core v1 Event named kopf-event-…, from component "kopf", in
// obj's namespace (events about cluster-scoped objects go to the namespace
// of the operator's kubeconfig context, else "default").
//
// obj is the handler's argument (*Change), a body (map[string]any,
// *unstructured.Unstructured), a client-go typed object such as a *corev1.Pod
// the handler created (its apiVersion and kind are found even though
// client-go leaves TypeMeta empty), or a slice of them: one event each.
//
// Posting happens in the background: Event never blocks on the API, and a
// failed post is a logged warning, never an error of the handler. Messages
// over 1024 bytes keep their head and tail around "...". Events about core
// v1 Events are skipped silently. Settings.Posting.Disabled turns all
// posting off. The error is for mistakes: a ctx not from the operator
// (ErrNoOperator), an object without identity, an empty reason.
func Event(ctx context.Context, obj any, eventType, reason, message string) error {
	return post(ctx, obj, func(p *posting.Poster, ref posting.Ref) error {
		return p.Event(ref, eventType, reason, message)
	})
}

// Info posts a "Normal" event, if Settings.Posting.Level lets INFO through
// (it does by default). See Event.
func Info(ctx context.Context, obj any, reason, message string) error {
	return post(ctx, obj, func(p *posting.Poster, ref posting.Ref) error {
		return p.Info(ref, reason, message)
	})
}

// Warn posts a "Warning" event, if Settings.Posting.Level lets WARNING
// through. See Event.
func Warn(ctx context.Context, obj any, reason, message string) error {
	return post(ctx, obj, func(p *posting.Poster, ref posting.Ref) error {
		return p.Warn(ref, reason, message)
	})
}

// Exception posts an "Error" event about err, if Settings.Posting.Level lets
// ERROR through. As in Kopf, an empty reason becomes the error's type name
// (e.g. "StatusError"; "Error" for errors.New and fmt.Errorf), and the
// message becomes "<message> <err>". See Event.
func Exception(ctx context.Context, obj any, reason, message string, err error) error {
	return post(ctx, obj, func(p *posting.Poster, ref posting.Ref) error {
		return p.Exception(ref, reason, message, err)
	})
}

func post(ctx context.Context, obj any, fn func(*posting.Poster, posting.Ref) error) error {
	p := posting.From(ctx)
	if p == nil {
		return ErrNoOperator
	}
	ids, err := objects.Identities(obj)
	if err != nil {
		return fmt.Errorf("cannot post an event: %w", err)
	}
	var errs []error
	for _, id := range ids {
		ref := posting.Ref{APIVersion: id.APIVersion, Kind: id.Kind, Name: id.Name, UID: id.UID, Namespace: id.Namespace}
		errs = append(errs, fn(p, ref))
	}
	return errors.Join(errs...)
}

// defaultNamespace is the namespace of the credentials' context, where
// events about cluster-scoped objects go; "" ("default") when the operator
// was given a RESTConfig, which carries no namespace.
func (op *Operator) defaultNamespace() string {
	if op.opts.RESTConfig != nil {
		return ""
	}
	return kube.DefaultNamespace(op.opts.Kubeconfig, op.opts.Context)
}
