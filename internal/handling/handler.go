package handling

import (
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/kopfgo/kopfgo/internal/causes"
	"github.com/kopfgo/kopfgo/internal/handlers"
	"github.com/kopfgo/kopfgo/internal/resources"
)

// Handler is one registered resource-changing handler.
type Handler struct {
	// ID keys the handler's progress and results; see DeriveID.
	ID string
	// Reason is the cause the handler serves: create, update, delete or
	// resume. Field handlers have Update and AnyCause.
	Reason causes.Reason
	// AnyCause: an On.Field handler, which, as in Kopf's code (its reason
	// is None), serves every cause in which its field changes, unless
	// Settings.Handling.FieldHandlersOnUpdatesOnly keeps it to updates.
	AnyCause bool
	// Field, when set, restricts the handler to changes of this path: the
	// handler sees Old, New and Diff relative to it.
	Field    []string
	Fn       handlers.ChangeFunc
	Selector resources.Selector
	// Resource is the selector as the user wrote it, for messages.
	Resource string

	Retries  int           // 0: unlimited
	Backoff  time.Duration // 0: settings' default backoff
	Timeout  time.Duration // 0: none
	Errors   handlers.ErrorsMode
	Optional bool // delete handlers: do not require the finalizer
	// Global: indexers see every object of the resource, not only those
	// of the shards the replica holds (sharding).
	Global  bool
	Deleted bool // resume handlers: also run for objects being deleted
	Param   any
	// Filters restrict the handler to matching objects and changes.
	Filters Filters

	// FuncName is the Go name of Fn, for messages.
	FuncName string
	// fnPtr identifies Fn for deduplication (Kopf dedups by function and id).
	fnPtr uintptr
}

var closureRE = regexp.MustCompile(`\.func\d+(\.\d+)*$|^glob\.`)

// funcName returns the Go name of a function and the id Kopf-style
// derivation gives it: the unqualified name of a top-level function
// ("createFn"), or "Type.Method" for a method value. Closures and function
// literals have no stable name (the compiler numbers them, func1, func2 …,
// and the numbers shift with edits), so their id is "" and they must be
// registered with an explicit ID: the id keys persisted progress.
func funcName(fn any) (full, id string) {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return "", ""
	}
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return "", ""
	}
	full = f.Name()
	name := full
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	// Drop the package name: "pkg.createFn" → "createFn".
	if i := strings.Index(name, "."); i >= 0 {
		name = name[i+1:]
	}
	if closureRE.MatchString(name) {
		return full, ""
	}
	if strings.HasSuffix(name, "-fm") {
		name = strings.TrimSuffix(name, "-fm")
		name = strings.NewReplacer("(*", "", ")", "").Replace(name)
	}
	return full, name
}

func funcPtr(fn any) uintptr {
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return 0
	}
	return v.Pointer()
}
