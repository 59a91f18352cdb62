//go:build e2e

package e2e

import (
	"context"
	"maps"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kopfgo/kopfgo/e2e/runner"
)

// Kopf's own suite for its examples (tests/e2e/test_examples.py in Kopf's
// repository) runs every example as an operator, creates and deletes
// examples/obj.yaml, and then checks the log: the finalizer was added, the
// creation and the deletion were in progress, the object was really deleted,
// every handler succeeded (or failed) the counted number of times, no
// tracebacks. Each example tunes the run with E2E_* markers in its source.
// TestExamplesPassKopfSuiteChecks applies the same checks to kopfgo's ports,
// with the markers copied from Kopf's examples. The examples with tests of
// their own in Kopf (10-builtins, 11-filtering-handlers) are left out of
// Kopf's suite, and of this one: TestExample10PassesKopfTest and
// TestExample11PassesKopfTest port their own tests.

// kopfExample is one example as Kopf's suite sees it: what its E2EParser
// reads from the example's source (the kinds of its handlers), and its E2E_*
// markers verbatim (nil when the example has none).
type kopfExample struct {
	dir string

	// @kopf.on.create; @kopf.on.delete without optional=True; any of
	// @kopf.on.create/update/delete.
	hasOnCreate, hasMandatoryOnDelete, hasChangingHandlers bool

	startupStopWords, creationStopWords, deletionStopWords, cleanupStopWords []string
	startupTimeLimit, creationTimeLimit, deletionTimeLimit, cleanupTimeLimit time.Duration
	allowTracebacks                                                          bool
	successCounts, failureCounts                                             map[string]int

	// readyLine says the operator serves; default "Serving " (a resource
	// served), for an example of admission handlers only, its webhooks.
	readyLine string

	// setup prepares the namespace before the operator starts: Kopf's suite
	// runs on a real cluster, which has pods of its own; the test cluster
	// has none.
	setup func(t *testing.T, ns string)
}

var kopfSuiteExamples = []kopfExample{
	{dir: "01-minimal", hasOnCreate: true, hasChangingHandlers: true},
	{dir: "02-children", hasOnCreate: true, hasChangingHandlers: true},
	{dir: "03-exceptions", hasOnCreate: true, hasChangingHandlers: true,
		allowTracebacks:   true,
		creationStopWords: []string{"Something has changed,"},
		successCounts:     map[string]int{"eventual_success_with_a_few_messages": 1},
		failureCounts: map[string]int{"eventual_failure_with_tracebacks": 1,
			"instant_failure_with_traceback":      1,
			"instant_failure_with_only_a_message": 1}},
	{dir: "04-events", hasOnCreate: true, hasChangingHandlers: true},
	{dir: "05-handlers", hasOnCreate: true, hasMandatoryOnDelete: true, hasChangingHandlers: true},
	{dir: "06-peering", hasOnCreate: true, hasChangingHandlers: true},
	{dir: "07-subhandlers", hasOnCreate: true, hasChangingHandlers: true},
	{dir: "08-events",
		allowTracebacks: true,
		successCounts:   map[string]int{"normal_event_fn": 2}},
	{dir: "13-hooks",
		startupStopWords: []string{"Served by the background task."},
		cleanupStopWords: []string{"Hung tasks", "Root tasks"},
		successCounts:    map[string]int{"startup_fn_simple": 1, "startup_fn_retried": 1, "cleanup_fn": 1},
		setup:            func(t *testing.T, ns string) { createPod(t, ns) }},
	{dir: "14-daemons",
		creationStopWords: []string{"=> Ping from"},
		deletionStopWords: []string{"'background_async' is cancelled",
			"'background_sync' is cancelled",
			"'background_async' has exited"}},
	{dir: "15-timers"},
	{dir: "16-indexing",
		// "We do not care: pods can have 6-10 updates here."
		successCounts: map[string]int{}},
	{dir: "17-admission",
		// "We do not care: pods can have 6-10 updates here."
		successCounts: map[string]int{},
		readyLine:     "Reconfiguring the mutating webhook auto.kopf.dev."},
	{dir: "99-all-at-once", hasOnCreate: true, hasMandatoryOnDelete: true, hasChangingHandlers: true,
		allowTracebacks:   true,
		startupStopWords:  []string{"Served by the background task."},
		cleanupStopWords:  []string{"Hung tasks", "Root tasks"},
		creationStopWords: []string{"Creation is processed:"},
		deletionStopWords: []string{"Deleted, really deleted"},
		successCounts: map[string]int{"create_1": 1, "create_2": 1, "create_pod": 1, "delete": 1,
			"startup_fn_simple": 1, "startup_fn_retried": 1, "cleanup_fn": 1}},
}

// The log searches of Kopf's suite, as it writes them.
var (
	succeededRE = regexp.MustCompile(`'(.+?)' succeeded`)
	failedRE    = regexp.MustCompile(`'(.+?)' failed (?:permanently|with an exception and will stop)`)
	// A Go stack trace (a handler's panic, or a crash): Kopf's
	// "Traceback (most recent call last):".
	tracebackRE = regexp.MustCompile(`(?m)^goroutine \d+ \[|^panic: `)
)

func TestExamplesPassKopfSuiteChecks(t *testing.T) {
	for _, ex := range kopfSuiteExamples {
		t.Run(ex.dir, func(t *testing.T) { runKopfSuiteChecks(t, ex) })
	}
}

// runKopfSuiteChecks is Kopf's test_all_examples_are_runnable for one
// example. Two differences, both from the shared test cluster: the operator
// serves the test's own namespace instead of --all-namespaces (other tests'
// objects named kopf-example-1 live in other namespaces), and it is started
// by `kopfgo run`, which builds the example first, so the run waits for the
// operator to serve its resources before it looks for the startup stop
// words (Kopf's default, "Client is configured", is not a kopfgo line).
// Where Kopf's suite only gives the operator time ("give it some time to
// react"), the run also waits for the evidence that it has reacted: the
// object handled after its creation, and gone after its deletion (as
// `kubectl delete` waits).
func runKopfSuiteChecks(t *testing.T, ex kopfExample) {
	ns := namespace(t)
	if ex.setup != nil {
		ex.setup(t, ns)
	}
	op := runOperator(t, "./examples/"+ex.dir, ns)
	ready := ex.readyLine
	if ready == "" {
		ready = "Serving "
	}
	waitLog(t, op, ready, 1)
	if ex.startupStopWords != nil {
		sleepTillStopword(t, op, ex.startupTimeLimit, ex.startupStopWords)
	}

	obj := createKex(t, ns, objYAML(t))
	name := obj.GetName()
	sleepTillStopword(t, op, ex.creationTimeLimit, ex.creationStopWords)
	if ex.hasChangingHandlers {
		waitKex(t, ns, name, "the creation handled", handled)
	}

	deleteKex(t, ns, name)
	waitGone(t, ns, name)
	sleepTillStopword(t, op, ex.deletionTimeLimit, ex.deletionStopWords)

	stopErr := op.Stop(waitLong)
	sleepTillStopword(t, op, ex.cleanupTimeLimit, ex.cleanupStopWords)

	// The operator did not die on start, or during the operation.
	if stopErr != nil || op.ExitCode() != 0 {
		t.Errorf("the operator exited with code %d (%v), want 0", op.ExitCode(), stopErr)
	}
	out := op.Log()
	prefix := "[" + ns + "/" + name + "] "
	if ex.hasMandatoryOnDelete {
		assertLogHas(t, out, prefix+"Adding the finalizer")
	}
	if ex.hasOnCreate {
		assertLogHas(t, out, prefix+"Creation is in progress:")
	}
	if ex.hasMandatoryOnDelete {
		assertLogHas(t, out, prefix+"Deletion is in progress:")
	}
	if ex.hasChangingHandlers {
		assertLogHas(t, out, prefix+"Deleted, really deleted")
	}
	if !ex.allowTracebacks && tracebackRE.MatchString(out) {
		t.Errorf("a stack trace in the log of an example that allows none")
	}

	// Once a handler succeeds, it is never executed again.
	checkHandlerCounts(t, "succeeded", handlerCounts(succeededRE, op.Lines()), ex.successCounts, false)
	// Once a handler fails, it is never executed again.
	checkHandlerCounts(t, "failed", handlerCounts(failedRE, op.Lines()), ex.failureCounts, true)
}

// sleepTillStopword is Kopf's _sleep_till_stopword: it waits until a line
// matches one of the patterns (regular expressions, searched), or the delay
// passes (10 s with patterns, 3 s without), or the operator exits. Kopf's
// suite goes on either way; so does this one, saying so.
func sleepTillStopword(t *testing.T, p *runner.Process, delay time.Duration, patterns []string) bool {
	t.Helper()
	if delay == 0 {
		delay = 3 * time.Second
		if len(patterns) > 0 {
			delay = 10 * time.Second
		}
	}
	res := make([]*regexp.Regexp, len(patterns))
	for i, pattern := range patterns {
		res[i] = regexp.MustCompile(pattern)
	}
	found := func() bool {
		for _, line := range p.Lines() {
			for _, re := range res {
				if re.MatchString(line) {
					return true
				}
			}
		}
		return false
	}
	if err := p.WaitUntil(context.Background(), delay, "the stop words", found); err != nil {
		if len(patterns) > 0 {
			t.Logf("none of the stop words %q within %s", patterns, delay)
		}
		return false
	}
	return true
}

// handlerCounts counts the handler ids that re's first group finds in the
// log lines. kopfgo's "Patching with: {...}" debug lines are skipped: their
// progress records carry failure messages ("Handler 'x' failed permanently:
// ..."), which Kopf's repr of its patches escapes (\'x\') out of the
// search's reach, and kopfgo's JSON does not.
func handlerCounts(re *regexp.Regexp, lines []string) map[string]int {
	counts := map[string]int{}
	for _, line := range lines {
		if strings.Contains(line, "Patching with: ") {
			continue
		}
		for _, m := range re.FindAllStringSubmatch(line, -1) {
			counts[m[1]]++
		}
	}
	return counts
}

// checkHandlerCounts is Kopf's check of the counts: with a marker, the
// counts of the marker's ids equal the marker; without one, every handler
// that succeeded did so exactly once (and some did), and none failed.
func checkHandlerCounts(t *testing.T, what string, got, marker map[string]int, noneWithoutMarker bool) {
	t.Helper()
	if marker != nil {
		checked := map[string]int{}
		for id, n := range got {
			if _, ok := marker[id]; ok {
				checked[id] = n
			}
		}
		if !maps.Equal(checked, marker) {
			t.Errorf("handlers %s %v times, want %v (all %s: %v)", what, checked, marker, what, got)
		}
		return
	}
	if noneWithoutMarker {
		if len(got) != 0 {
			t.Errorf("handlers %s: %v, want none", what, got)
		}
		return
	}
	values := map[int]bool{}
	for _, n := range got {
		values[n] = true
	}
	if len(values) != 1 || !values[1] {
		// Kopf's runs always have one: its built-in login activity
		// ("Activity 'login_via_client' succeeded.").
		t.Errorf("handlers %s %v times, want each exactly once (and some)", what, got)
	}
}

func assertLogHas(t *testing.T, out, substr string) {
	t.Helper()
	if !strings.Contains(out, substr) {
		t.Errorf("no log line contains %q", substr)
	}
}

// TestExample10PassesKopfTest is Kopf's examples/10-builtins/test_example_10.py:
// a pod is created and deleted 5 seconds later; its creation and deletion
// are handled, its killing scheduled and cancelled.
func TestExample10PassesKopfTest(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/10-builtins", ns)
	waitLog(t, op, "Serving ", 1)
	pod := createPod(t, ns)
	prefix := "[" + ns + "/" + pod.Name + "] "
	// Kopf gives it 5 s to react; the evidence of the reaction is the
	// scheduled killing.
	waitLog(t, op, prefix+"=== Pod killing happens in 30s.", 1)
	if err := kube(t).CoreV1().Pods(ns).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPodGone(t, ns, pod.Name)
	stopErr := op.Stop(waitLong)

	if stopErr != nil || op.ExitCode() != 0 {
		t.Errorf("the operator exited with code %d (%v), want 0", op.ExitCode(), stopErr)
	}
	out := op.Log()
	assertLogHas(t, out, prefix+"Creation is in progress:")
	assertLogHas(t, out, prefix+"=== Pod killing happens in 30s.")
	assertLogHas(t, out, prefix+"Deletion is in progress:")
	assertLogHas(t, out, prefix+"=== Pod killing is cancelled!")
}

// TestExample11PassesKopfTest is Kopf's
// examples/11-filtering-handlers/test_example_11.py: the object is created,
// its spec.field changed to "changed", and deleted; the matching filters'
// handlers logged their lines, the others did not.
func TestExample11PassesKopfTest(t *testing.T) {
	ns := namespace(t)
	op := runOperator(t, "./examples/11-filtering-handlers", ns)
	waitLog(t, op, "Serving ", 1)
	obj := createKex(t, ns, objYAML(t))
	name := obj.GetName()
	prefix := "[" + ns + "/" + name + "] "
	// Kopf gives it 5 s to react, then 2 s after the patch, 1 s after the
	// deletion; the evidence of each reaction is the object handled (its
	// diff-base has the change) and gone.
	waitHandledWith(t, ns, name, `"field":"value"`)
	waitLog(t, op, prefix+"Field daemon is satisfied.", 1)
	patchKex(t, ns, name, `{"spec":{"field":"changed"}}`)
	waitHandledWith(t, ns, name, `"field":"changed"`)
	deleteKex(t, ns, name)
	waitGone(t, ns, name)
	stopErr := op.Stop(waitLong)

	if stopErr != nil || op.ExitCode() != 0 {
		t.Errorf("the operator exited with code %d (%v), want 0", op.ExitCode(), stopErr)
	}
	out := op.Log()
	for _, line := range []string{
		"Label is matching.", "Label is present.", "Label is absent.", "Label callback matching.",
		"Annotation is matching.", "Annotation is present.", "Annotation is absent.",
		"Filter satisfied.", "Field value is satisfied.", "Field presence is satisfied.",
		"Field change is satisfied.", "Field daemon is satisfied.",
	} {
		assertLogHas(t, out, prefix+line)
	}
	for _, line := range []string{
		"Annotation callback mismatch.", "Filter not satisfied.",
		"Field value is not satisfied.", "Field presence is not satisfied.",
	} {
		if strings.Contains(out, prefix+line) {
			t.Errorf("the log has %q", prefix+line)
		}
	}
}
