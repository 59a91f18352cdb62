//go:build e2e

package e2e

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// (compat: activities-login, activities-login-retries, activities-reauth):
// credentials come from login handlers; a 401 drops them and the login handlers
// run again.
func TestLoginHandlersAndReauthenticationOn401(t *testing.T) {
	ns := namespace(t)
	var logins atomic.Int32
	var creates countingCreate
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Login(loginRejectedOnce(t, &logins), kopfgo.ID("login"))
		op.On.Create("kopfexamples", creates.fn, kopfgo.ID("create"))
	})
	obj := createKex(t, ns, objYAML(t))
	waitKex(t, ns, obj.GetName(), "handled with the second credentials", handled)
	if n := logins.Load(); n != 2 {
		t.Errorf("login handler called %d times, want 2", n)
	}
	log.WaitFor(t, "Initial authentication has finished.", 1)
	log.WaitFor(t, "Re-authentication has been initiated.", 1)
	if n := creates.get(obj.GetName()); n != 1 {
		t.Errorf("handled %d times, want 1", n)
	}
}

func TestLoginWithoutCredentialsFailsRun(t *testing.T) {
	ns := namespace(t)
	op := kopfgo.New(kopfgo.Options{Namespaces: []string{ns}})
	op.On.Login(func(ctx context.Context, a *kopfgo.Activity) (*kopfgo.ConnectionInfo, error) {
		return nil, nil
	}, kopfgo.ID("login"))
	op.On.Create("kopfexamples", (&countingCreate{}).fn, kopfgo.ID("create"))
	ctx, cancel := context.WithTimeout(context.Background(), waitLong)
	defer cancel()
	err := op.Run(ctx)
	if err == nil || ctx.Err() != nil {
		t.Fatalf("Run = %v, want an authentication error before the timeout", err)
	}
	t.Logf("Run: %v", err)
}

// loginRejectedOnce is a login handler whose first credentials the API
// answers with 401, so that a re-authentication follows; it counts its
// calls in logins and logs each ("login handler called n=N").
func loginRejectedOnce(t *testing.T, logins *atomic.Int32) kopfgo.LoginFunc {
	shared := cluster.Shared(t)
	return func(ctx context.Context, a *kopfgo.Activity) (*kopfgo.ConnectionInfo, error) {
		n := logins.Add(1)
		a.Logger.Info("login handler called", "n", n)
		info := &kopfgo.ConnectionInfo{Server: shared.APIServerURL, CAData: shared.RESTConfig().CAData, Token: shared.Token}
		if n == 1 {
			info.Token = "not-a-valid-token"
		}
		return info, nil
	}
}
