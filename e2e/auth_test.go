//go:build e2e

package e2e

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/kopfgo/kopfgo"
	"github.com/kopfgo/kopfgo/e2e/cluster"
)

// K2-008, K2-010, K2-011: credentials come from login handlers; a 401 drops
// them and the login handlers run again.
func TestLoginHandlersAndReauthenticationOn401(t *testing.T) {
	ns := namespace(t)
	shared := cluster.Shared(t)
	ca := shared.RESTConfig().CAData
	var logins atomic.Int32
	var creates countingCreate
	log := embedded(t, ns, func(op *kopfgo.Operator) {
		op.On.Login(func(ctx context.Context, a *kopfgo.Activity) (*kopfgo.ConnectionInfo, error) {
			info := &kopfgo.ConnectionInfo{Server: shared.APIServerURL, CAData: ca, Token: shared.Token}
			if logins.Add(1) == 1 {
				info.Token = "not-a-valid-token" // the API answers 401
			}
			return info, nil
		}, kopfgo.ID("login"))
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
