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
