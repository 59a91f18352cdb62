//go:build e2e

package e2e

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kopfgo/kopfgo"
)

// (compat: logging-names): a startup handler silences kopf.activities.authentication; a
// forced re-authentication then logs nothing under it, while the other
// loggers, kopf.activities.login among them, still write.
func TestStartupHandlerSilencesAuthenticationLogger(t *testing.T) {
	ns := namespace(t)
	var logins atomic.Int32
	var creates countingCreate
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Startup(func(ctx context.Context, a *kopfgo.Activity) error {
			a.Settings.Logging.Filter = kopfgo.JoinLogFilters(a.Settings.Logging.Filter,
				kopfgo.SilenceLoggers("kopf.activities.authentication"))
			return nil
		}, kopfgo.ID("silence"))
		op.On.Login(loginRejectedOnce(t, &logins), kopfgo.ID("login"))
		op.On.Create("kopfexamples", creates.fn, kopfgo.ID("create"))
	})
	obj := createKex(t, ns, objYAML(t))
	// The re-authentication's lines are written before the login handler
	// runs and before its credentials are used: by now they would be there.
	waitKex(t, ns, obj.GetName(), "handled with the second credentials", handled)
	if n := logins.Load(); n != 2 {
		t.Fatalf("login handler called %d times, want 2 (a re-authentication)", n)
	}
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	if n := log.Count("login handler called n=2"); n != 1 {
		t.Errorf("%d lines of the re-authentication's login handler, want 1", n)
	}
	if n := log.Count("authentication has"); n != 0 {
		t.Errorf("%d lines of the silenced kopf.activities.authentication, want 0", n)
	}
}

// (compat: logging-filters): with posting of loggers on, a filter on
// kopf.objects that drops messages containing "secret" keeps them out of the
// log and out of the posted events; other messages still go to both.
func TestLogFilterAppliesToLogAndEvents(t *testing.T) {
	ns := namespace(t)
	var s kopfgo.Settings
	s.Posting.Loggers = true
	s.Logging.Filter = func(logger string, r slog.Record) bool {
		return logger != "kopf.objects" || !strings.Contains(r.Message, "secret")
	}
	log, stop := operatorWith(t, ns, kopfgo.Options{Settings: s}, func(op *kopfgo.Operator) {
		op.On.Create("kopfexamples", func(ctx context.Context, c *kopfgo.Change) (any, error) {
			c.Logger.Info("the secret is 42")
			c.Logger.Info("a public message")
			return nil, nil
		}, kopfgo.ID("create"))
	})
	obj := createKex(t, ns, objYAML(t))
	log.WaitFor(t, "Creation is processed: 1 succeeded; 0 failed.", 1)
	stop() // posts what is queued
	got := summary(eventsAbout(t, ns, string(obj.GetUID())))
	public := false
	for _, g := range got {
		public = public || g == "Normal/Logging/a public message"
		if strings.Contains(g, "secret") {
			t.Errorf("a filtered message was posted: %q", g)
		}
	}
	if !public {
		t.Errorf("no event of the public message among %q", got)
	}
	if n := log.Count("a public message"); n != 1 {
		t.Errorf("%d log lines of the public message, want 1", n)
	}
	if n := log.Count("secret"); n != 0 {
		t.Errorf("%d log lines with the secret, want 0", n)
	}
}
