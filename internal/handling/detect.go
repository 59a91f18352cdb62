package handling

import (
	"fmt"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/config"
)

// Detector works out what happened to the objects of one resource for its
// changing handlers. It is the reactor's one entry point for detection, so
// that a pass reads its facts with calls into one package rather than into
// the object's store (store.go), cause detection and the filters
// one by one.
type Detector struct {
	changing []*Handler
	// extraFields are the fields outside the default essence that the
	// handlers watch (ExtraFields).
	extraFields [][]string
	// persistence is the run's, read on every call: the finalizer is the
	// settings' as it stands, and so are the storages behind store.
	persistence *config.Persistence
	store       Store
}

// NewDetector returns the detector of the changing handlers of one
// resource (create, update, delete, resume, field).
func NewDetector(changing []*Handler, p *config.Persistence) *Detector {
	return &Detector{changing: changing, extraFields: ExtraFields(changing), persistence: p, store: StoreOf(p)}
}

// Marks reads what decides a pass before any detection: whether the object
// is being deleted and whether it carries the operator's finalizer.
func (d *Detector) Marks(body map[string]any) (deleting, hasFinalizer bool) {
	return causes.IsDeleting(body), causes.HasFinalizer(body, d.persistence.Finalizer)
}

// Detection is what Detect found about an object.
type Detection struct {
	// Reason is what happened to the object (causes.Detect).
	Reason causes.Reason
	// InScope: some changing handler's filters match the object (Kopf's
	// prematch).
	InScope bool
	// HandlersRequire: a non-optional delete handler in scope matches the
	// object, so that it needs the finalizer.
	HandlersRequire bool
}

// Detect works out what happened to the object of c (Kopf's
// detect_changing_cause): its essence against the last handled one, the
// diff between them and the cause, whether any changing handler has it in
// scope, and whether a delete handler needs the finalizer. It sets c's Old,
// New, Diff and Reason, which the handling cycle and the filters read. An
// unreadable last-handled configuration is warned about on c's logger (before
// any filter runs, as always) and the object handled as never handled.
func (d *Detector) Detect(c *Cause) Detection {
	var det Detection
	var err error
	c.Old, c.New, err = d.essences(c.Body)
	if err != nil {
		c.Logger.Warn(fmt.Sprintf("Ignoring the unreadable last-handled configuration; the object is handled as never handled before: %v", err))
	}
	c.Diff = DiffOf(c.Old, c.New)
	c.Reason = causes.Detect(causes.Input{
		Body: c.Body, Finalizer: d.persistence.Finalizer, Old: c.Old, New: c.New, Diff: c.Diff, Initial: c.Initial,
	})
	det.Reason = c.Reason
	det.InScope = Prematch(d.changing, c)
	det.HandlersRequire = det.InScope && RequiresFinalizerFor(d.changing, c)
	return det
}

// Gone completes the cause of an object deleted from the cluster (Reason
// causes.Gone, its essences and diff; an unreadable diff-base counts as
// never handled) and reports whether the changing handlers have it in
// scope, for Kopf's last line about it.
func (d *Detector) Gone(c *Cause) bool {
	c.Reason = causes.Gone
	c.Old, c.New, _ = d.essences(c.Body)
	c.Diff = DiffOf(c.Old, c.New)
	return Prematch(d.changing, c)
}

// Handled stores the object's current essence (c.New, from Detect) as its
// diff-base, into c's patch: the next pass detects against it.
func (d *Detector) Handled(c *Cause) {
	d.store.Handled(c.Body, c.Patch, c.New)
}

// essences returns the object's last handled essence (nil if never handled,
// or if it cannot be read: err says why) and its current essence.
func (d *Detector) essences(body map[string]any) (old, essence map[string]any, err error) {
	old, err = d.store.LastHandled(body)
	return old, d.Essence(body), err
}

// Essence is the object's essence as the diff-base stores it, without the
// progress storage's own keys.
func (d *Detector) Essence(body map[string]any) map[string]any {
	return d.store.Essence(body, d.extraFields)
}
