package kopfgo

import (
	"log/slog"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kopfgo/kopfgo/internal/flowcontrol"
	"github.com/kopfgo/kopfgo/internal/kube"
	"github.com/kopfgo/kopfgo/internal/metrics"
)

// flowControl is the one gate of the operator's requests to the API server
// at cfg.Host, shared by the reactor's, the peering's and the admission's
// clients (compat: flow-control); nil when Settings.Networking.FlowControl
// is disabled.
func flowControl(cfg *rest.Config, s Settings, clk clock.Clock, logger *slog.Logger, obs *observability) *flowcontrol.Gate {
	fc := s.Networking.FlowControl
	if fc.Disabled {
		return nil
	}
	g := flowcontrol.New(flowcontrol.Config{
		Host:     strings.TrimSuffix(cfg.Host, "/"),
		Writes:   flowcontrol.Limits{Initial: fc.InitialWrites, Max: fc.MaxWrites},
		Reads:    flowcontrol.Limits{Initial: fc.InitialReads, Max: fc.MaxReads},
		Clock:    clk,
		Logger:   logger,
		Observer: obs,
	})
	if obs.metrics != nil {
		obs.metrics.APIFlow(func() ([]metrics.APIFlowClass, bool) {
			st := g.Stats()
			var out []metrics.APIFlowClass
			for _, c := range []flowcontrol.Class{flowcontrol.Write, flowcontrol.Read} {
				cs := st.Of(c)
				out = append(out, metrics.APIFlowClass{Class: c.String(), InFlight: cs.InFlight, Limit: cs.Limit, Waiting: cs.Waiting})
			}
			return out, st.Unavailable
		})
	}
	return g
}

// clientOptions are the options of every client the operator builds.
func clientOptions(s Settings, flow *flowcontrol.Gate) kube.ClientOptions {
	return kube.ClientOptions{RequestTimeout: s.Networking.RequestTimeout, TrustEnv: s.Networking.TrustEnv, Flow: flow}
}

// The flow control's observer (flowcontrol.Observer).

func (obs *observability) Waited(class flowcontrol.Class, d time.Duration) {
	if obs.metrics != nil {
		obs.metrics.APIWaited(class.String(), d)
	}
}

func (obs *observability) Rejected(class flowcontrol.Class, code int) {
	if obs.metrics != nil {
		obs.metrics.APIRejected(class.String(), code)
	}
}
