package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kopfgo/kopfgo/internal/logging"
)

// RunFlags are the options of `kopf run` that apply to kopfgo (compat: cli-flags),
// plus --kubeconfig and --context; -m/--module has no meaning in Go.
type RunFlags struct {
	Namespaces    []string // -n/--namespace, repeatable; patterns as in Kopf
	AllNamespaces bool     // -A/--all-namespaces
	Standalone    bool     // --standalone
	Peering       string   // -P/--peering: mandatory peering of this name
	Priority      *int     // -p/--priority; nil: Settings.Peering.Priority
	Dev           bool     // --dev: priority 666
	Verbose       bool     // -v/--verbose
	Debug         bool     // -d/--debug
	Quiet         bool     // -q/--quiet
	LogFormat     string   // --log-format plain|full|json
	LogPrefix     *bool    // --log-prefix/--no-log-prefix; nil: by format
	LogRefKey     string   // --log-refkey
	Kubeconfig    string   // --kubeconfig
	Context       string   // --context
	Liveness      string   // -L/--liveness
	MetricsAddr   string   // --metrics-addr (kopfgo's own)
	// MemoryLimitRatio: --memory-limit-ratio (kopfgo's own); 0 not given,
	// negative off (see Settings.Process.MemoryLimitRatio).
	MemoryLimitRatio float64
	// MaxRequestsInFlight: --max-requests-in-flight (kopfgo's own); 0 not
	// given (see Settings.Networking.FlowControl).
	MaxRequestsInFlight int
	NoFlowControl       bool // --no-flow-control (kopfgo's own)
	// NoConditions: --no-conditions (kopfgo's own; see
	// Settings.Persistence.Conditions).
	NoConditions bool
	// ConditionsEveryPass: --conditions-every-pass (kopfgo's own; see
	// Settings.Persistence.Conditions.EveryPass).
	ConditionsEveryPass bool

	// Typos (kopfgo's own; see Settings.Scanning.Strict and
	// ReadyWhileUnresolved).
	Strict               bool // --strict
	ReadyWhileUnresolved bool // --ready-while-unresolved

	// Admission webhooks in a cluster (kopfgo's own; see
	// Settings.Admission.Service and CertSecret).
	WebhookService string // --webhook-service [NAMESPACE/]NAME[:PORT]
	WebhookSecret  string // --webhook-secret [NAMESPACE/]NAME
	// WebhookGoawayChance: --webhook-goaway-chance; 0 not given, negative
	// off (see Settings.Admission.GoawayChance).
	WebhookGoawayChance float64

	// The caps on passes (kopfgo's own; see Settings.Execution.MaxWorkers
	// and Settings.Queueing): 0 not given.
	MaxWorkers     int           // --max-workers
	ResourceRate   float64       // --resource-rate
	ResourceBurst  int           // --resource-burst
	ObjectInterval time.Duration // --object-interval

	// Leader election (kopfgo's own; see kopfgo.LeaderElection).
	LeaderElect              bool          // --leader-elect
	LeaderElectLease         string        // --leader-elect-lease
	LeaderElectNamespace     string        // --leader-elect-namespace
	LeaderElectLeaseDuration time.Duration // --leader-elect-lease-duration
	LeaderElectRenewDeadline time.Duration // --leader-elect-renew-deadline
	LeaderElectRetryPeriod   time.Duration // --leader-elect-retry-period

	// Sharding (kopfgo's own; see kopfgo.Sharding).
	Shards              int           // --shards
	ShardsName          string        // --shards-name
	ShardsNamespace     string        // --shards-namespace
	ShardsLeaseDuration time.Duration // --shards-lease-duration
	ShardsRenewDeadline time.Duration // --shards-renew-deadline
	ShardsRetryPeriod   time.Duration // --shards-retry-period
}

// The environment variables of the flags, as Kopf's click names them
// (auto_envvar_prefix KOPF, the command, the parameter's name): e.g. -A is
// the parameter "clusterwide". KOPF_RUN_NAMESPACE (singular, legacy) is
// handled separately: it is always appended to the namespaces.
var envNames = map[string]string{
	"namespace":          "KOPF_RUN_NAMESPACES",
	"all-namespaces":     "KOPF_RUN_CLUSTERWIDE",
	"standalone":         "KOPF_RUN_STANDALONE",
	"peering":            "KOPF_RUN_PEERING",
	"priority":           "KOPF_RUN_PRIORITY",
	"dev":                "KOPF_RUN_DEV",
	"verbose":            "KOPF_RUN_VERBOSE",
	"debug":              "KOPF_RUN_DEBUG",
	"quiet":              "KOPF_RUN_QUIET",
	"log-format":         "KOPF_RUN_LOG_FORMAT",
	"log-prefix":         "KOPF_RUN_LOG_PREFIX",
	"no-log-prefix":      "KOPF_RUN_LOG_PREFIX",
	"log-refkey":         "KOPF_RUN_LOG_REFKEY",
	"kubeconfig":         "KOPF_RUN_KUBECONFIG",
	"context":            "KOPF_RUN_CONTEXT",
	"liveness":           "KOPF_RUN_LIVENESS_ENDPOINT",
	"metrics-addr":       "KOPFGO_METRICS_ADDR",
	"memory-limit-ratio": "KOPFGO_MEMORY_LIMIT_RATIO",
	"max-workers":        "KOPFGO_MAX_WORKERS",
	"resource-rate":      "KOPFGO_RESOURCE_RATE",
	"resource-burst":     "KOPFGO_RESOURCE_BURST",
	"object-interval":    "KOPFGO_OBJECT_INTERVAL",

	"max-requests-in-flight": "KOPFGO_MAX_REQUESTS_IN_FLIGHT",
	"no-flow-control":        "KOPFGO_NO_FLOW_CONTROL",
	"no-conditions":          "KOPFGO_NO_CONDITIONS",
	"conditions-every-pass":  "KOPFGO_CONDITIONS_EVERY_PASS",

	"strict":                 "KOPFGO_STRICT",
	"ready-while-unresolved": "KOPFGO_READY_WHILE_UNRESOLVED",

	"webhook-service": "KOPFGO_WEBHOOK_SERVICE",
	"webhook-secret":  "KOPFGO_WEBHOOK_SECRET",

	"webhook-goaway-chance": "KOPFGO_WEBHOOK_GOAWAY_CHANCE",

	"leader-elect":                "KOPFGO_LEADER_ELECT",
	"leader-elect-lease":          "KOPFGO_LEADER_ELECT_LEASE",
	"leader-elect-namespace":      "KOPFGO_LEADER_ELECT_NAMESPACE",
	"leader-elect-lease-duration": "KOPFGO_LEADER_ELECT_LEASE_DURATION",
	"leader-elect-renew-deadline": "KOPFGO_LEADER_ELECT_RENEW_DEADLINE",
	"leader-elect-retry-period":   "KOPFGO_LEADER_ELECT_RETRY_PERIOD",

	"shards":                "KOPFGO_SHARDS",
	"shards-name":           "KOPFGO_SHARDS_NAME",
	"shards-namespace":      "KOPFGO_SHARDS_NAMESPACE",
	"shards-lease-duration": "KOPFGO_SHARDS_LEASE_DURATION",
	"shards-renew-deadline": "KOPFGO_SHARDS_RENEW_DEADLINE",
	"shards-retry-period":   "KOPFGO_SHARDS_RETRY_PERIOD",
}

// LegacyNamespaceEnv names one more namespace, appended to the others.
const LegacyNamespaceEnv = "KOPF_RUN_NAMESPACE"

// Bind defines the flags on fs, writing to f.
func (f *RunFlags) Bind(fs *pflag.FlagSet) {
	fs.SortFlags = false
	usage := func(name, text string) string { return text + " [$" + envNames[name] + "]" }
	fs.StringArrayVarP(&f.Namespaces, "namespace", "n", nil, usage("namespace",
		"serve this namespace, or the namespaces matching this pattern: globs with * and ?, "+
			"negated with !, several comma-separated in one pattern; repeatable"))
	fs.BoolVarP(&f.AllNamespaces, "all-namespaces", "A", false, usage("all-namespaces",
		"serve the whole cluster through the cluster-wide API endpoints (the default without -n)"))
	fs.BoolVar(&f.Standalone, "standalone", false, usage("standalone",
		"no peering: read and write no peering objects, serve whatever other operators do"))
	fs.StringVarP(&f.Peering, "peering", "P", "", usage("peering",
		"the peering object's name; peering is then mandatory (default: \"default\", if it exists)"))
	fs.AddFlag(&pflag.Flag{Name: "priority", Shorthand: "p", Value: &intPtrValue{&f.Priority},
		Usage: usage("priority", "the priority among peers: those of lower priority stand by (default 0)")})
	fs.BoolVar(&f.Dev, "dev", false, usage("dev",
		"priority 666: a developer's operator that the deployed ones stand by for"))
	fs.BoolVarP(&f.Verbose, "verbose", "v", false, usage("verbose",
		"log at DEBUG: what the operator is doing"))
	fs.BoolVarP(&f.Debug, "debug", "d", false, usage("debug",
		"log at DEBUG, with client-go's internals and the API traffic"))
	fs.BoolVarP(&f.Quiet, "quiet", "q", false, usage("quiet",
		"log only warnings and errors"))
	fs.StringVar(&f.LogFormat, "log-format", string(logging.FormatFull), usage("log-format",
		"log format: plain, full or json"))
	fs.AddFlag(&pflag.Flag{Name: "log-prefix", NoOptDefVal: "true", Value: &prefixValue{&f.LogPrefix, true},
		Usage: usage("log-prefix", "prefix object-related messages with [namespace/name] (default: on, off for json)")})
	fs.AddFlag(&pflag.Flag{Name: "no-log-prefix", NoOptDefVal: "true", Value: &prefixValue{&f.LogPrefix, false},
		Usage: "do not prefix object-related messages"})
	fs.StringVar(&f.LogRefKey, "log-refkey", "", usage("log-refkey",
		`for json logs, the key of the object reference (default "object")`))
	fs.StringVar(&f.Kubeconfig, "kubeconfig", "", usage("kubeconfig",
		"kubeconfig file (default: $KUBECONFIG, ~/.kube/config, or the in-cluster service account)"))
	fs.StringVar(&f.Context, "context", "", usage("context",
		"kubeconfig context (default: the current context)"))
	fs.StringVarP(&f.Liveness, "liveness", "L", "", usage("liveness",
		"serve the probe handlers' results for liveness probes at this URL, e.g. http://0.0.0.0:8080/healthz; "+
			"/readyz there answers readiness probes, and /metrics serves the metrics unless --metrics-addr is given"))
	fs.StringVar(&f.MetricsAddr, "metrics-addr", "", usage("metrics-addr",
		"serve Prometheus metrics at http://ADDR/metrics (and readiness at /readyz), e.g. 0.0.0.0:9090"))
	fs.Var(&ratioValue{&f.MemoryLimitRatio, "a share of the memory limit"}, "memory-limit-ratio", usage("memory-limit-ratio",
		"give Go's garbage collector this share of the container's (cgroup's) memory limit as its soft limit, "+
			"unless GOMEMLIMIT is set; off to leave it alone (default 0.9)"))
	fs.IntVar(&f.MaxWorkers, "max-workers", 0, usage("max-workers",
		"run at most this many objects' passes (and so their handlers) at once; the others wait in one queue "+
			"(default: follow the API server's capacity, as the flow control measures it)"))
	fs.Float64Var(&f.ResourceRate, "resource-rate", 0, usage("resource-rate",
		"start at most this many passes per second for each resource (default: no cap)"))
	fs.IntVar(&f.ResourceBurst, "resource-burst", 0, usage("resource-burst",
		"with --resource-rate, allow bursts of this many passes (default: the rate)"))
	fs.DurationVar(&f.ObjectInterval, "object-interval", 0, usage("object-interval",
		"start one object's passes at least this long apart; changes that come sooner are handled together (default: none)"))
	fs.IntVar(&f.MaxRequestsInFlight, "max-requests-in-flight", 0, usage("max-requests-in-flight",
		"let at most this many of the operator's writes, and as many reads, be in flight to the API server; "+
			"the flow control adapts its limits below it (default 64)"))
	fs.BoolVar(&f.NoFlowControl, "no-flow-control", false, usage("no-flow-control",
		"send every API request at once, as Kopf does, without the adaptive limits and the outage gate"))
	fs.BoolVar(&f.NoConditions, "no-conditions", false, usage("no-conditions",
		"write no Ready, Reconciling and Stalled conditions into the objects' status, as Kopf writes none"))
	fs.BoolVar(&f.ConditionsEveryPass, "conditions-every-pass", false, usage("conditions-every-pass",
		"keep the conditions' observedGeneration current after every update, even when that costs a status request of its own"))
	fs.BoolVar(&f.Strict, "strict", false, usage("strict",
		"fail at start, instead of warning, when a handler's resource does not exist or its field path is not in the CRD's schema"))
	fs.BoolVar(&f.ReadyWhileUnresolved, "ready-while-unresolved", false, usage("ready-while-unresolved",
		"say ready at /readyz while some handler's resource does not exist (default: not ready until all exist)"))
	fs.StringVar(&f.WebhookService, "webhook-service", "", usage("webhook-service",
		"the managed webhook configurations reach the admission server through this Service, [NAMESPACE/]NAME[:PORT] "+
			"(default namespace: $POD_NAMESPACE or the service account's; default port 443), instead of its URL"))
	fs.StringVar(&f.WebhookSecret, "webhook-secret", "", usage("webhook-secret",
		"keep the admission server's CA and certificate in this Secret, [NAMESPACE/]NAME: created if absent, "+
			"shared by the replicas, rotated before expiry"))
	fs.Var(&ratioValue{&f.WebhookGoawayChance, "a chance"}, "webhook-goaway-chance", usage("webhook-goaway-chance",
		"the chance, per admission request, that the answer asks the API server to send the next ones over a new connection, "+
			"so that behind a Service they spread over the replicas; off to keep the connections (default 0.02)"))
	fs.BoolVar(&f.LeaderElect, "leader-elect", false, usage("leader-elect",
		"run as one of several replicas: only the holder of a Lease serves, the others stand by (no peering)"))
	fs.StringVar(&f.LeaderElectLease, "leader-elect-lease", "", usage("leader-elect-lease",
		`the Lease's name (default "kopfgo-operator")`))
	fs.StringVar(&f.LeaderElectNamespace, "leader-elect-namespace", "", usage("leader-elect-namespace",
		"the Lease's namespace (default: $POD_NAMESPACE, the service account's or the kubeconfig context's)"))
	fs.DurationVar(&f.LeaderElectLeaseDuration, "leader-elect-lease-duration", 0, usage("leader-elect-lease-duration",
		"how long others wait after the leader's last renewal before taking the Lease (default 15s)"))
	fs.DurationVar(&f.LeaderElectRenewDeadline, "leader-elect-renew-deadline", 0, usage("leader-elect-renew-deadline",
		"how long the leader tries to renew before standing by (default 10s)"))
	fs.DurationVar(&f.LeaderElectRetryPeriod, "leader-elect-retry-period", 0, usage("leader-elect-retry-period",
		"how often replicas try to take or renew the Lease (default 2s)"))
	fs.IntVar(&f.Shards, "shards", 0, usage("shards",
		"run as one of several active replicas: the objects are split into this many shards, each served by the replica "+
			"holding its Lease (the same number on every replica; no peering)"))
	fs.StringVar(&f.ShardsName, "shards-name", "", usage("shards-name",
		`the shards' Leases are named NAME-shard-<i> (default "kopfgo-operator")`))
	fs.StringVar(&f.ShardsNamespace, "shards-namespace", "", usage("shards-namespace",
		"the shards' Leases' namespace (default: $POD_NAMESPACE, the service account's or the kubeconfig context's)"))
	fs.DurationVar(&f.ShardsLeaseDuration, "shards-lease-duration", 0, usage("shards-lease-duration",
		"how long others wait after a replica's last renewal before taking its shards (default 15s)"))
	fs.DurationVar(&f.ShardsRenewDeadline, "shards-renew-deadline", 0, usage("shards-renew-deadline",
		"how long a replica tries to renew a shard's Lease before it stops serving the shard (default 10s)"))
	fs.DurationVar(&f.ShardsRetryPeriod, "shards-retry-period", 0, usage("shards-retry-period",
		"how often replicas renew their Leases and balance the shards (default 2s)"))
}

// Complete applies the environment variables to the flags not given on the
// command line (lookup is os.LookupEnv outside tests), then validates the
// flags. Its errors are usage errors.
func (f *RunFlags) Complete(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var errs []error
	changed := func(name string) bool { return fs.Changed(name) }
	fs.VisitAll(func(fl *pflag.Flag) {
		env := envNames[fl.Name]
		if env == "" || changed(fl.Name) || (env == envNames["log-prefix"] && (changed("log-prefix") || changed("no-log-prefix"))) {
			return
		}
		v, ok := lookup(env)
		if !ok || strings.TrimSpace(v) == "" || fl.Name == "no-log-prefix" {
			return // empty is unset, as in click
		}
		if err := setFromEnv(fl, v); err != nil {
			errs = append(errs, fmt.Errorf("invalid value %q for $%s: %w", v, env, err))
		}
	})
	if v, ok := lookup(LegacyNamespaceEnv); ok && v != "" {
		f.Namespaces = append(f.Namespaces, v)
	}
	if len(f.Namespaces) > 0 && f.AllNamespaces {
		errs = append(errs, errors.New("either --namespace or --all-namespaces can be used, not both"))
	}
	for _, ns := range f.Namespaces {
		if strings.TrimSpace(ns) == "" {
			errs = append(errs, errors.New("--namespace must not be empty"))
			break
		}
	}
	if f.WebhookService != "" {
		if _, _, _, err := ParseWebhookService(f.WebhookService); err != nil {
			errs = append(errs, err)
		}
	}
	if _, err := logging.ParseFormat(f.LogFormat); err != nil || f.LogFormat == "" {
		errs = append(errs, fmt.Errorf("invalid --log-format %q: use plain, full or json", f.LogFormat))
	}
	return errors.Join(errs...)
}

// ParseWebhookService reads --webhook-service: [NAMESPACE/]NAME[:PORT];
// the namespace may be empty and the port 0 (defaults apply later).
func ParseWebhookService(s string) (namespace, name string, port int, err error) {
	name = s
	if i := strings.LastIndex(name, ":"); i >= 0 {
		if port, err = strconv.Atoi(name[i+1:]); err != nil || port < 1 || port > 65535 {
			return "", "", 0, fmt.Errorf("invalid --webhook-service %q: the port after ':' must be a number from 1 to 65535", s)
		}
		name = name[:i]
	}
	if ns, n, found := strings.Cut(name, "/"); found {
		namespace, name = ns, n
		if namespace == "" {
			return "", "", 0, fmt.Errorf("invalid --webhook-service %q: the namespace before '/' is empty", s)
		}
	}
	if name == "" || strings.ContainsAny(name, "/:") {
		return "", "", 0, fmt.Errorf("invalid --webhook-service %q: use [NAMESPACE/]NAME[:PORT]", s)
	}
	return namespace, name, port, nil
}

func setFromEnv(fl *pflag.Flag, v string) error {
	switch val := fl.Value.(type) {
	case pflag.SliceValue:
		// Click splits the values of repeatable options on whitespace.
		return val.Replace(strings.Fields(v))
	case *prefixValue:
		b, err := parseBool(v)
		if err != nil {
			return err
		}
		*val.target = &b
		return nil
	}
	if fl.Value.Type() == "bool" {
		b, err := parseBool(v)
		if err != nil {
			return err
		}
		v = strconv.FormatBool(b)
	}
	return fl.Value.Set(v)
}

// parseBool parses booleans as click does.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "t", "yes", "y", "on":
		return true, nil
	case "0", "false", "f", "no", "n", "off":
		return false, nil
	}
	return false, errors.New("not a boolean: use 1/0, true/false, yes/no or on/off")
}

// Level is the log level the verbosity flags ask for (compat: logging-levels).
func (f *RunFlags) Level() slog.Level {
	switch {
	case f.Debug || f.Verbose:
		return slog.LevelDebug
	case f.Quiet:
		return slog.LevelWarn
	}
	return slog.LevelInfo
}

// Logging is the logging configuration the flags ask for.
func (f *RunFlags) Logging(w io.Writer) logging.Config {
	format, _ := logging.ParseFormat(f.LogFormat)
	return logging.Config{Format: format, Level: f.Level(), Prefix: f.LogPrefix, RefKey: f.LogRefKey, Writer: w}
}

// Args returns the flags given on the command line of fs, as arguments
// that give the same flags to another command with the same definitions.
// The environment variables are not included: the other command reads them
// itself.
func Args(fs *pflag.FlagSet) []string {
	var args []string
	prefixDone := false
	fs.Visit(func(fl *pflag.Flag) {
		switch v := fl.Value.(type) {
		case *prefixValue:
			if !prefixDone {
				args = append(args, "--log-prefix="+v.String())
				prefixDone = true
			}
		case pflag.SliceValue:
			for _, s := range v.GetSlice() {
				args = append(args, "--"+fl.Name+"="+s)
			}
		default:
			args = append(args, "--"+fl.Name+"="+fl.Value.String())
		}
	})
	return args
}

// prefixValue is one of --log-prefix (sets) and --no-log-prefix (sets
// false): a pair sharing one tri-state target, the last given one wins.
type prefixValue struct {
	target **bool
	sets   bool
}

func (p *prefixValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	v := b == p.sets
	*p.target = &v
	return nil
}

func (p *prefixValue) String() string {
	if p.target == nil || *p.target == nil {
		return ""
	}
	return strconv.FormatBool(**p.target)
}

func (p *prefixValue) Type() string { return "bool" }

// ratioValue is a flag of a share in (0, 1] (--memory-limit-ratio,
// --webhook-goaway-chance), or off (0 and "off" both), which it keeps as
// -1; what names the share in errors.
type ratioValue struct {
	p    *float64
	what string
}

func (v *ratioValue) String() string {
	switch {
	case *v.p < 0:
		return "off"
	case *v.p == 0:
		return ""
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}

func (v *ratioValue) Set(s string) error {
	if s = strings.TrimSpace(s); s == "off" {
		*v.p = -1
		return nil
	}
	r, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || r < 0 || r > 1:
		return fmt.Errorf("not %s between 0 and 1, nor off: %q", v.what, s)
	case r == 0:
		*v.p = -1
	default:
		*v.p = r
	}
	return nil
}

func (v *ratioValue) Type() string { return "ratio" }

// intPtrValue is an int flag that tells "not given" (nil) from 0.
type intPtrValue struct{ p **int }

func (v *intPtrValue) String() string {
	if *v.p == nil {
		return ""
	}
	return strconv.Itoa(**v.p)
}

func (v *intPtrValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return fmt.Errorf("not an integer: %q", s)
	}
	*v.p = &n
	return nil
}

func (v *intPtrValue) Type() string { return "int" }
