//go:build e2e

package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kopfgo/kopfgo"
)

// machineAddr is this machine's first non-loopback IPv4 address: the
// EndpointSlices the API server routes Service webhooks to may not hold a
// loopback address.
func machineAddr(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
			return ipn.IP.String()
		}
	}
	t.Skip("this machine has no non-loopback IPv4 address for the Service's endpoints: a webhook through a Service cannot be routed here")
	return ""
}

// freePortOn is a port free on addr now.
func freePortOn(t *testing.T, addr string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// webhookService creates a Service without a selector, port 443 ("https"),
// and one EndpointSlice per replica's port on addr, as the endpoints
// controller would for pods: the harness's API server (with
// --enable-aggregator-routing) calls the webhooks at these addresses.
func webhookService(t *testing.T, ns, name, addr string, ports ...int) {
	t.Helper()
	ctx := context.Background()
	k := kube(t)
	_, err := k.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "https", Port: 443, TargetPort: intstr.FromInt(ports[0]), Protocol: corev1.ProtocolTCP,
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, port := range ports {
		portName, p, ready := "https", int32(port), true
		_, err := k.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("%s-%d", name, i), Labels: map[string]string{discoveryv1.LabelServiceName: name},
			},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
			Ports:       []discoveryv1.EndpointPort{{Name: &portName, Port: &p}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// secretBundle is the CA bundle kept in the certificates' Secret.
func secretBundle(t *testing.T, ns, name string) string {
	t.Helper()
	s, err := kube(t).CoreV1().Secrets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(s.Data["ca.crt"])
}

func denyWrong(calls *atomic.Int64) kopfgo.AdmissionFunc {
	return func(ctx context.Context, a *kopfgo.Admission) error {
		calls.Add(1)
		if a.Spec["field"] == "wrong" {
			return &kopfgo.AdmissionError{Message: "Change the field.", Code: 422}
		}
		return nil
	}
}

// replicasBehindAService starts an operator for each port on addr, behind
// the Service "hooks" in ns (its endpoints), sharing the certificates'
// Secret "hooks-certs" and serving the validating handler "check" of
// resource (denyWrong); tune, when set, changes each one's admission
// settings. It returns each replica's count of calls.
func replicasBehindAService(t *testing.T, ns, managed, resource, addr string, ports []int, tune func(*kopfgo.AdmissionSettings)) []*atomic.Int64 {
	t.Helper()
	webhookService(t, ns, "hooks", addr, ports...)
	calls := make([]*atomic.Int64, len(ports))
	for i, port := range ports {
		calls[i] = &atomic.Int64{}
		opts := kopfgo.Options{}
		opts.Settings.Admission = kopfgo.AdmissionSettings{
			Server: &kopfgo.WebhookServer{Addr: addr, Port: port}, Managed: managed,
			Service: &kopfgo.WebhookService{Name: "hooks", Namespace: ns}, CertSecret: ns + "/hooks-certs",
		}
		if tune != nil {
			tune(&opts.Settings.Admission)
		}
		operatorWith(t, ns, opts, func(op *kopfgo.Operator) { op.On.Validate(resource, denyWrong(calls[i]), kopfgo.ID("check")) })
	}
	return calls
}

// The managed webhook names the Service (clientConfig.service, the
// namespace from $POD_NAMESPACE as the downward API gives it), the API
// server calls the operator through the Service's endpoints, and the CA is
// kept in a Secret that a restarted operator reuses (compat:
// admission-servers).
func TestAdmissionThroughAService(t *testing.T) {
	gvr, resource := admissionCRD(t)
	ns := namespace(t)
	t.Setenv("POD_NAMESPACE", ns)
	managed := managedConfigs(t, "s")
	addr := machineAddr(t)
	port := freePortOn(t, addr)
	webhookService(t, ns, "hooks", addr, port)
	opts := kopfgo.Options{}
	opts.Settings.Admission = kopfgo.AdmissionSettings{
		Server: &kopfgo.WebhookServer{Addr: addr, Port: port}, Managed: managed,
		Service: &kopfgo.WebhookService{Name: "hooks"}, CertSecret: "hooks-certs",
	}
	var calls atomic.Int64
	register := func(op *kopfgo.Operator) { op.On.Validate(resource, denyWrong(&calls), kopfgo.ID("check")) }
	_, stop := operatorWith(t, ns, opts, register)

	var client map[string]any
	eventually(t, waitLong, "the managed webhook", func() (bool, error) {
		hooks := webhooksOf(t, validatingGVR, managed)
		if len(hooks) != 1 {
			return false, nil
		}
		client = hooks[0]["clientConfig"].(map[string]any)
		return true, nil
	})
	svc, _ := client["service"].(map[string]any)
	if client["url"] != nil || svc == nil || svc["name"] != "hooks" || svc["namespace"] != ns || svc["path"] != "/check" || fmt.Sprint(svc["port"]) != "443" {
		t.Fatalf("clientConfig = %v", client)
	}
	bundle := client["caBundle"].(string)
	if got := secretBundle(t, ns, "hooks-certs"); got != bundle {
		t.Errorf("the Secret's CA bundle is not the webhook's")
	}

	gates := dyn(t).Resource(gvr).Namespace(ns)
	var err error
	eventually(t, waitShort, "a rejection through the Service", func() (bool, error) {
		_, err = gates.Create(context.Background(), gateObj(gvr, "wrong", map[string]any{"field": "wrong"}, nil), metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), "denied the request: Change the field."), nil
	})
	if _, err := gates.Create(context.Background(), gateObj(gvr, "fine", map[string]any{"field": "fine"}, nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("a valid object is rejected: %v", err)
	}
	if calls.Load() < 2 {
		t.Errorf("the handler was called %d times", calls.Load())
	}
	stop()

	// Restarted, the operator serves the certificate kept in the Secret:
	// the bundle stays.
	_, stop2 := operatorWith(t, ns, opts, register)
	eventually(t, waitShort, "the restarted operator's call", func() (bool, error) {
		_, err = gates.Create(context.Background(), gateObj(gvr, "wrong2", map[string]any{"field": "wrong"}, nil), metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), "denied the request: Change the field."), nil
	})
	if got := caBundles(t, managed); len(got) != 1 || got[0] != bundle {
		t.Errorf("the restarted operator changed the CA bundle")
	}
	stop2()
}

// Two replicas behind one Service share the certificates' Secret, and
// rotate them while requests flow: dry-run creations through the API
// server run all along; every valid one is admitted and every invalid one
// denied by the handler, none fails on TLS. The API server picks a replica
// when it dials (it resolves the Service then) and keeps the connection,
// so the calls may all reach one replica: each replica is also dialled
// directly all along, as the API server would, verifying its certificate
// against the configuration's CA bundle of the moment. The bundle holds
// both CAs during the overlap and the new one after it, and each replica
// serves the new certificate (compat: admission-servers).
func TestAdmissionCertificateRotationUnderLoad(t *testing.T) {
	gvr, resource := admissionCRD(t)
	ns := namespace(t)
	managed := managedConfigs(t, "r")
	addr := machineAddr(t)
	ports := []int{freePortOn(t, addr), freePortOn(t, addr)}
	calls := replicasBehindAService(t, ns, managed, resource, addr, ports, func(a *kopfgo.AdmissionSettings) {
		// Rotated 18 s after the issue, served 2 s later, the old CA
		// retired at 30 s, the next rotation at 38 s.
		a.Rotation = kopfgo.CertRotation{Validity: 30 * time.Second, RenewBefore: 12 * time.Second, CheckInterval: time.Second}
	})
	var first string
	eventually(t, waitLong, "the managed webhook", func() (bool, error) {
		b := caBundles(t, managed)
		if len(b) == 1 {
			first = b[0]
		}
		return len(b) == 1, nil
	})
	gates := dyn(t).Resource(gvr).Namespace(ns)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	eventually(t, waitShort, "the webhook to be called", func() (bool, error) {
		_, err := gates.Create(context.Background(), gateObj(gvr, "wrong", map[string]any{"field": "wrong"}, nil), dry)
		return err != nil && strings.Contains(err.Error(), "denied the request: Change the field."), nil
	})

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var sent atomic.Int64
	var mu sync.Mutex
	var failures []string
	// The failed requests are reported even when the rotation is not seen.
	var once sync.Once
	stopLoad := func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			t.Logf("%d dry-run creations during the rotation; calls per replica: %d, %d", sent.Load(), calls[0].Load(), calls[1].Load())
			if len(failures) > 0 {
				t.Errorf("%d of %d requests failed during the rotation:\n%s", len(failures), sent.Load(), strings.Join(failures, "\n"))
			}
		})
	}
	defer stopLoad()
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				wrong := i%5 == 0
				field := "fine"
				if wrong {
					field = "wrong"
				}
				_, err := gates.Create(ctx, gateObj(gvr, fmt.Sprintf("g%d-%d", w, i), map[string]any{"field": field}, nil), dry)
				if ctx.Err() != nil {
					return
				}
				sent.Add(1)
				ok := err == nil
				if wrong {
					ok = err != nil && strings.Contains(err.Error(), "denied the request: Change the field.")
				}
				if !ok {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s at %s: %v", field, time.Now().Format(time.StampMilli), err))
					mu.Unlock()
				}
			}
		})
	}

	// What each replica serves, as a client of the Service would see it.
	serial := func(port int) string {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", net.JoinHostPort(addr, strconv.Itoa(port)),
			&tls.Config{InsecureSkipVerify: true, ServerName: "hooks." + ns + ".svc"})
		if err != nil {
			return ""
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	// Whether each replica's certificate is trusted by the bundle of the
	// moment; the bundle is read before the dial, and a replica serves a
	// new certificate only after its CA has joined the bundle.
	verified := make([]int, len(ports))
	var untrusted []string
	trusted := func(raw []byte) {
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(raw) {
			untrusted = append(untrusted, "the CA bundle holds no certificate")
			return
		}
		for i, port := range ports {
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", net.JoinHostPort(addr, strconv.Itoa(port)),
				&tls.Config{RootCAs: roots, ServerName: "hooks." + ns + ".svc"})
			if err != nil {
				untrusted = append(untrusted, fmt.Sprintf("replica %d at %s: %v", i, time.Now().Format(time.StampMilli), err))
				continue
			}
			_ = conn.Close()
			verified[i]++
		}
	}
	initial := []string{serial(ports[0]), serial(ports[1])}
	sawOverlap := false
	eventually(t, 2*waitShort, "a rotation: the new CA joins, both replicas serve its certificate, the old CA leaves", func() (bool, error) {
		b := caBundles(t, managed)
		if len(b) != 1 {
			return false, nil
		}
		raw, _ := base64.StdEncoding.DecodeString(b[0])
		trusted(raw)
		switch n := strings.Count(string(raw), "BEGIN CERTIFICATE"); {
		case n == 2:
			sawOverlap = true
			return false, nil
		case n != 1 || b[0] == first:
			return false, nil
		}
		now := []string{serial(ports[0]), serial(ports[1])}
		return sawOverlap && now[0] != initial[0] && now[1] != initial[1] && now[0] != "" && now[1] != "", nil
	})
	stopLoad()
	if calls[0].Load()+calls[1].Load() == 0 {
		t.Errorf("no replica got a call during the rotation")
	}
	if len(untrusted) > 0 {
		t.Errorf("%d direct handshakes failed against the bundle of the moment:\n%s", len(untrusted), strings.Join(untrusted, "\n"))
	}
	if verified[0] == 0 || verified[1] == 0 {
		t.Errorf("handshakes verified per replica: %d, %d; want each replica checked during the rotation", verified[0], verified[1])
	}
	if got := secretBundle(t, ns, "hooks-certs"); got != caBundles(t, managed)[0] {
		t.Errorf("the webhook's CA bundle is not the Secret's")
	}
}

// Two replicas behind one Service, with the default GoawayChance: reviews
// that come one at a time reach both. The API server picks a replica when
// it dials and keeps its connection while it has no more calls in flight,
// so without the chance one replica would answer them all; an answer that
// closes the connection makes the next review dial again (compat:
// admission-servers).
func TestAdmissionReviewsSpreadOverReplicas(t *testing.T) {
	gvr, resource := admissionCRD(t)
	ns := namespace(t)
	managed := managedConfigs(t, "g")
	addr := machineAddr(t)
	calls := replicasBehindAService(t, ns, managed, resource, addr, []int{freePortOn(t, addr), freePortOn(t, addr)}, nil)
	gates := dyn(t).Resource(gvr).Namespace(ns)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	eventually(t, waitLong, "the webhook to be called", func() (bool, error) {
		_, err := gates.Create(context.Background(), gateObj(gvr, "wrong", map[string]any{"field": "wrong"}, nil), dry)
		return err != nil && strings.Contains(err.Error(), "denied the request: Change the field."), nil
	})
	// At the default chance of 0.02, 1500 reviews dial about 30 times:
	// all of them reaching one replica of two is a chance under 1e-6.
	const reviews = 1500
	before := []int64{calls[0].Load(), calls[1].Load()}
	for i := range reviews {
		if _, err := gates.Create(context.Background(), gateObj(gvr, fmt.Sprintf("g%d", i), map[string]any{"field": "fine"}, nil), dry); err != nil {
			t.Fatalf("review %d: %v", i, err)
		}
	}
	got := []int64{calls[0].Load() - before[0], calls[1].Load() - before[1]}
	t.Logf("%d reviews one at a time; answered per replica: %d, %d", reviews, got[0], got[1])
	if got[0]+got[1] != reviews {
		t.Errorf("the replicas answered %d reviews, want %d", got[0]+got[1], reviews)
	}
	if got[0] == 0 || got[1] == 0 {
		t.Errorf("one replica answered every review (%d, %d): the API server kept its connection", got[0], got[1])
	}
}
