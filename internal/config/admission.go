package config

import "time"

// Admission configures the admission webhooks (Kopf's settings.admission):
// where the webhook server listens and whether the operator manages the
// webhook configurations itself.
type Admission struct {
	// Server is the webhook server. Nil with validating or mutating
	// handlers registered fails Run, as Kopf fails at start.
	Server *WebhookServer
	// Managed, e.g. "auto.kopf.dev", is the name of the
	// ValidatingWebhookConfiguration and MutatingWebhookConfiguration the
	// operator creates and keeps up to date, one webhook per handler; the
	// webhooks' names end with it. Empty: configured by someone else.
	Managed string
	// Service, when set, is the Service through which the API server
	// reaches the server in a cluster: the managed configurations name it
	// (clientConfig.service) instead of the server's URL, and a generated
	// certificate is made for its DNS names. Nil: the URL, for local
	// development. It sits here rather than in Server so that the CLI's
	// --webhook-service survives a startup handler setting Server.
	Service *WebhookService
	// CertSecret, when set, is the Secret ("NAME" in the Service's or the
	// pod's namespace, or "NAMESPACE/NAME") that keeps the generated CA and
	// server certificate: created if absent, shared by every replica, and
	// rotated before expiry. Empty: generated at each start, in memory.
	// Server.CertFile takes precedence.
	CertSecret string
	// Rotation tunes the certificates kept in CertSecret.
	Rotation CertRotation
	// GoawayChance is the chance, per request, that the server's answer
	// asks the API server to send its next reviews over a new connection
	// ("Connection: close"), as kube-apiserver's --goaway-chance does for
	// its own clients. Behind a Service, the API server keeps sending
	// reviews over the connections it has, to the replicas it dialled:
	// when reviews come a few at a time, one replica answers them all. A
	// new connection may reach another replica, so the reviews spread over
	// them. Default 0.02 (a TLS handshake per 50 reviews, about); at most
	// 1; negative disables.
	GoawayChance float64
}

// DefaultGoawayChance is Admission.GoawayChance's default.
const DefaultGoawayChance = 0.02

// WebhookService is a Service in front of the webhook server (Kubernetes'
// ServiceReference; Kopf's WebhookClientConfigService). The path is the
// server's Path.
type WebhookService struct {
	Name string
	// Namespace; empty: $POD_NAMESPACE, else the in-cluster service
	// account's or the kubeconfig context's, else "default".
	Namespace string
	// Port is the Service's port; 0: 443.
	Port int
}

// CertRotation says how long the certificates in CertSecret live and when
// they are replaced. A rotation issues a new CA and server certificate;
// the new CA joins the CA bundle at once, the replicas serve the new
// certificate 2×CheckInterval later (each has read the Secret by then),
// and the old CA leaves the bundle when the old certificate expires.
type CertRotation struct {
	// Validity of the CA and the server certificate. Default 90 days.
	Validity time.Duration
	// RenewBefore is how long before the expiry the rotation starts.
	// Default a third of Validity; it must exceed 2×CheckInterval.
	RenewBefore time.Duration
	// CheckInterval is how often every replica reads the Secret. Default 1m.
	CheckInterval time.Duration
}

// WebhookServer is a local HTTPS endpoint for the API server to call
// (Kopf's kopf.WebhookServer). There is no plain-HTTP mode: Kubernetes calls
// webhooks over TLS only.
type WebhookServer struct {
	// Addr is the address to listen on; empty: all interfaces.
	Addr string
	// Port to listen on; 0: a free port chosen at start.
	Port int
	// Path is the root path of the webhooks; each handler is served at
	// <Path>/<handler-id>.
	Path string
	// Host is the host name put into the webhooks' URLs; empty: Addr, or
	// 127.0.0.1 (::1) for a catch-all or empty Addr, as Kopf does.
	Host string
	// CertFile and KeyFile are the server's certificate and key (PEM). Empty:
	// a self-signed CA and a certificate for Host, Addr and ExtraSANs are
	// generated at start. The files are read again when they change.
	CertFile, KeyFile string
	// CAFile is the CA bundle handed to the API server in the webhooks'
	// caBundle; empty: the generated CA, or CertFile itself.
	CAFile string
	// CADump, when set, is where the CA bundle is written (for curl
	// --cacert and the like).
	CADump string
	// ExtraSANs are added to a generated certificate (DNS names or IPs).
	ExtraSANs []string
	// FileCheckInterval is how often CertFile, KeyFile and CAFile are
	// checked for changes. Default 60s (Kopf's file_check_interval).
	FileCheckInterval time.Duration
}
