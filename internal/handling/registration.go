package handling

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kopfgo/kopfgo/internal/dicts"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// registration is how one handler of any kind (changing, field, event,
// activity, daemon, timer, index, sub-handler) is validated: the options
// have already been applied to its spec, the embedded Handler. Every kind
// goes through spec.validate, so that a mistake reads the same whichever
// kind it is made in, and only what differs between the kinds is here.
type registration struct {
	// call is how the user registered it, for messages: `On.Create("kex")`,
	// `On.Daemon("kex")`, `On.Startup`, `Subhandler of "create_fn"`.
	call string
	// noun is "handler", or "indexer" for an index.
	noun string
	fn   any
	// resource is the selector as written, when scoped: activities and
	// sub-handlers have none of their own.
	resource string
	scoped   bool
	// field is On.Field's argument (isField): the Field option is then a
	// mistake.
	field   string
	isField bool
	// update: the handler sees a change (update and field handlers), so
	// OldValue and NewValue fit.
	update bool
	// optional, deleted: the Optional (delete handlers) and Deleted
	// (resume handlers) options fit. They share ChangeOption with the
	// other changing handlers' options, so a misfit is caught here.
	optional, deleted bool
	// keepID: a Field does not suffix the id (an index's name).
	keepID bool
	// check adds the kind's own checks (a timer's schedule, …).
	check func() []error
}

// Messages, one per mistake, the same for every kind.
const (
	msgNilFunc  = "the function is nil"
	msgClosure  = `a closure or function literal has no stable name; give it kopfgo.ID("..."), because the id keys what is kept for it (its progress, its result in status, an index's name)`
	msgNegative = "Retries, Backoff and Timeout must not be negative"
	msgFieldArg = "On.Field takes its field as an argument; remove the kopfgo.Field option"
	msgOptional = "kopfgo.Optional fits delete handlers only; remove it"
	msgDeleted  = "kopfgo.Deleted fits resume handlers only; remove it"
)

// validate completes the spec h from the registration (function name, id,
// field, selector) and returns the description naming it in messages and
// every mistake found, each a plain error (the caller prefixes the
// description).
func (h *Handler) validate(reg registration) (what string, errs []error) {
	full, derived := funcName(reg.fn)
	h.FuncName, h.fnPtr = full, funcPtr(reg.fn)
	name := full
	switch {
	case h.fnPtr == 0:
		name = "<nil>"
	case h.ID != "":
		name = fmt.Sprintf("%q (%s)", h.ID, full)
	}
	what = reg.call + " " + reg.noun + " " + name
	if reg.scoped {
		h.Resource = reg.resource
	}

	id := h.ID
	switch {
	case h.fnPtr == 0:
		errs = append(errs, errors.New(msgNilFunc))
	case id == "":
		id = derived
		if id == "" {
			errs = append(errs, errors.New(msgClosure))
		}
	}
	field := h.Filters.Field
	if reg.isField {
		if field != "" {
			errs = append(errs, errors.New(msgFieldArg))
		}
		field = reg.field
	}
	if reg.isField || field != "" {
		path, err := dicts.ParsePath(field)
		if err != nil {
			errs = append(errs, err)
		}
		h.Field = path
		if id != "" && len(path) > 0 && !reg.keepID {
			id += "/" + strings.Join(path, ".") // Kopf's suffix (compat: handlers-ids)
		}
	}
	h.ID = id
	errs = append(errs, h.Filters.validate(len(h.Field) > 0, reg.update)...)
	if h.Optional && !reg.optional {
		errs = append(errs, errors.New(msgOptional))
	}
	if h.Deleted && !reg.deleted {
		errs = append(errs, errors.New(msgDeleted))
	}
	if h.Retries < 0 || h.Backoff < 0 || h.Timeout < 0 {
		errs = append(errs, errors.New(msgNegative))
	}
	if reg.scoped {
		sel, err := resources.Parse(reg.resource)
		if err != nil {
			errs = append(errs, err)
		}
		h.Selector = sel
	}
	if reg.check != nil {
		errs = append(errs, reg.check()...)
	}
	return what, errs
}

// idKey is an id within the group of handlers whose ids share a namespace:
// the changing handlers of one cause of a resource, a resource's event
// handlers, a resource's daemons and timers (their results both go to
// status.<id>), an activity's handlers, the indices.
type idKey struct {
	group string
	sel   resources.Selector
	id    string
}

// record adds what the validation found to the registry's errors, each
// naming the handler, after checking that the id is not taken in its
// group. It returns them, joined: nil when the handler is valid, to be kept.
func (r *Registry) record(group string, sel resources.Selector, what string, h *Handler, errs []error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(errs) == 0 {
		k := idKey{group, sel, h.ID}
		if other, taken := r.ids[k]; taken {
			errs = append(errs, duplicate(h.ID, other))
		} else {
			if r.ids == nil {
				r.ids = map[idKey]string{}
			}
			r.ids[k] = what
		}
	}
	var joined []error
	for _, err := range errs {
		joined = append(joined, fmt.Errorf("%w: %s: %w", handlers.ErrRegistration, what, err))
	}
	r.errs = append(r.errs, joined...)
	return errors.Join(joined...)
}

// AddIndex validates and records an index: its name is the function's name
// or the ID option, with no field suffix (compat: indices-declare), unique
// among the operator's indices. Indexers default to the ignored errors mode
// (compat: indices-errors). The spec is returned even with errors, so that
// the index exists; the errors, each naming the indexer, are returned and
// kept for Run to report.
//
// named is the user's function when fn adapts it (typed indices), as in
// Registration; nil: fn.
func (r *Registry) AddIndex(resource string, fn, named any, configure func(*Handler)) (*Handler, error) {
	h := &Handler{Errors: handlers.ErrorsIgnored}
	if configure != nil {
		configure(h)
	}
	what, errs := h.validate(registration{
		call: fmt.Sprintf("OnIndex(%q)", resource), noun: "indexer", fn: adaptedFrom(fn, named),
		resource: resource, scoped: true, keepID: true,
	})
	return h, r.record("index", resources.Selector{}, what, h, errs)
}

// adaptedFrom is the function a handler is named and deduplicated after: the
// user's own (named) when the registered one adapts it, as the typed
// handlers' adapters do (they all share one name), else fn.
func adaptedFrom(fn, named any) any {
	if named != nil {
		return named
	}
	return fn
}

func duplicate(id, other string) error {
	return fmt.Errorf("duplicate id %q (also %s); give one of them another kopfgo.ID", id, other)
}
