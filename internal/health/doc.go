// Package health serves the operator's liveness endpoint (kopf run
// --liveness): a GET returns the probe handlers' results as JSON, cached for
// a while so that frequent probes by the kubelet do not run them each time,
// and 500 when a probe fails, so that a stuck operator gets restarted.
package health
