package cluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Defaults for Options.
const (
	DefaultStartTimeout = 90 * time.Second
	DefaultStopGrace    = 10 * time.Second
)

// Options configure Start. The zero value is usable: binaries are found or
// built, everything lives in a fresh temporary directory removed by Stop.
type Options struct {
	// Dir holds the data, certificates, keys, logs and the kubeconfig. Empty
	// means a new temporary directory, removed by Stop unless KeepDir. A given
	// Dir is never removed, and its etcd data is reused by the next Start, so
	// objects survive a restart of the whole cluster; remove the directory for
	// a clean cluster.
	Dir string
	// KeepDir keeps a temporary Dir after Stop, e.g. to read the server logs.
	KeepDir bool
	// Binaries to run; nil means EnsureBinaries (which may build them).
	Binaries *Binaries
	// StartTimeout bounds the wait for readiness (default 90 s), not the build.
	StartTimeout time.Duration
	// StopGrace is how long a server may take to exit on SIGTERM before it is
	// killed (default 10 s).
	StopGrace time.Duration
	// Logf receives progress messages; nil discards them.
	Logf Logf
	// Extra flags appended to the servers' command lines, e.g. feature gates.
	ExtraAPIServerArgs []string
	ExtraEtcdArgs      []string
}

// Cluster is a running etcd plus kube-apiserver on loopback ports, with an
// admin (system:masters) token. It has no controller-manager or scheduler:
// nothing garbage-collects owned objects, runs pods or fills in service
// accounts' tokens, which operator tests do not need.
type Cluster struct {
	// Dir is the cluster's directory (see Options.Dir).
	Dir string
	// Kubeconfig is the path of a kubeconfig file for the admin user.
	Kubeconfig string
	// APIServerURL is https://127.0.0.1:<port>.
	APIServerURL string
	// Token is the admin's bearer token.
	Token string

	opts     Options
	bins     Binaries
	ownDir   bool
	caData   []byte
	etcdURL  string
	apiArgs  []string
	etcdArgs []string

	mu        sync.Mutex
	etcd      *process
	apiserver *process
	stopped   bool

	clientsOnce sync.Once
	clientsErr  error
	dyn         dynamic.Interface
	mapper      *restmapper.DeferredDiscoveryRESTMapper
}

// errPortInUse marks a start failure caused by a port taken between picking and
// binding it; Start retries with other ports.
var errPortInUse = errors.New("port already in use")

// Start runs etcd and kube-apiserver and returns once the apiserver is ready and
// the default namespace exists. ctx bounds the start-up only (build included);
// the cluster runs until Stop. On failure, everything started is stopped and the
// error includes the tail of the failing server's log.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	var bins Binaries
	if opts.Binaries != nil {
		bins = *opts.Binaries
	} else {
		var err error
		if bins, err = EnsureBinaries(ctx, opts.Logf); err != nil {
			return nil, err
		}
	}

	c := &Cluster{opts: opts, bins: bins, Dir: opts.Dir}
	if c.Dir == "" {
		dir, err := os.MkdirTemp("", "kopfgo-cluster-")
		if err != nil {
			return nil, fmt.Errorf("creating the cluster directory: %w", err)
		}
		c.Dir, c.ownDir = dir, true
	} else if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the cluster directory: %w", err)
	}
	if abs, err := filepath.Abs(c.Dir); err == nil {
		c.Dir = abs
	}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")

	if err := c.start(ctx); err != nil {
		if stopErr := c.Stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context) error {
	started := time.Now()
	if err := c.writeCredentials(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()

	const attempts = 3
	for attempt := 1; ; attempt++ {
		err := c.startServers(ctx)
		if err == nil {
			break
		}
		c.stopServers()
		if !errors.Is(err, errPortInUse) || attempt == attempts {
			return err
		}
		c.opts.Logf.printf("%v; retrying with other ports", err)
	}

	// The apiserver generated a self-signed certificate followed by its CA;
	// trusting that file verifies TLS for real rather than skipping it.
	ca, err := os.ReadFile(filepath.Join(c.Dir, "certs", "apiserver.crt"))
	if err != nil {
		c.opts.Logf.printf("no apiserver certificate to trust (%v); the kubeconfig skips TLS verification", err)
		ca = nil
	}
	c.caData = ca
	kubeconfig, err := renderKubeconfig(c.APIServerURL, c.Token, c.caData)
	if err != nil {
		return err
	}
	if err := os.WriteFile(c.Kubeconfig, kubeconfig, 0o600); err != nil {
		return fmt.Errorf("writing the kubeconfig: %w", err)
	}
	if err := c.waitDefaultNamespace(ctx); err != nil {
		return err
	}
	c.opts.Logf.printf("cluster ready in %s at %s (dir %s)", time.Since(started).Round(100*time.Millisecond), c.APIServerURL, c.Dir)
	return nil
}

// writeCredentials creates the token file and the service-account key pair.
// A fresh token each start means a leaked kubeconfig of an old run is useless.
func (c *Cluster) writeCredentials() error {
	for _, sub := range []string{"etcd", "certs"} {
		if err := os.MkdirAll(filepath.Join(c.Dir, sub), 0o700); err != nil {
			return fmt.Errorf("creating the cluster directory: %w", err)
		}
	}
	var buf [16]byte
	if _, err := rand.Read(buf[:]); err != nil {
		return fmt.Errorf("generating the admin token: %w", err)
	}
	c.Token = hex.EncodeToString(buf[:])
	tokens := c.Token + ",admin,admin,system:masters\n"
	if err := os.WriteFile(filepath.Join(c.Dir, "tokens.csv"), []byte(tokens), 0o600); err != nil {
		return fmt.Errorf("writing the token file: %w", err)
	}

	// 2048 bits: the apiserver rejects nothing smaller for signing, and the
	// key is generated in a few tens of milliseconds.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generating the service-account key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("encoding the service-account key: %w", err)
	}
	files := map[string]*pem.Block{
		"key.pem": {Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)},
		"pub.pem": {Type: "PUBLIC KEY", Bytes: pub},
	}
	for name, block := range files {
		if err := os.WriteFile(filepath.Join(c.Dir, name), pem.EncodeToMemory(block), 0o600); err != nil {
			return fmt.Errorf("writing the service-account key: %w", err)
		}
	}
	return nil
}

func (c *Cluster) startServers(ctx context.Context) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	clientPort, peerPort, securePort := ports[0], ports[1], ports[2]
	c.etcdURL = "http://127.0.0.1:" + strconv.Itoa(clientPort)
	c.APIServerURL = "https://127.0.0.1:" + strconv.Itoa(securePort)

	c.etcdArgs = append([]string{
		"--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", c.etcdURL,
		"--advertise-client-urls", c.etcdURL,
		"--listen-peer-urls", "http://127.0.0.1:" + strconv.Itoa(peerPort),
	}, c.opts.ExtraEtcdArgs...)
	if err := c.startEtcd(ctx); err != nil {
		return err
	}

	c.apiArgs = append([]string{
		"--etcd-servers", c.etcdURL,
		"--secure-port", strconv.Itoa(securePort),
		"--bind-address", "127.0.0.1",
		"--cert-dir", filepath.Join(c.Dir, "certs"),
		"--token-auth-file", filepath.Join(c.Dir, "tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(c.Dir, "pub.pem"),
		"--service-account-signing-key-file", filepath.Join(c.Dir, "key.pem"),
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--disable-admission-plugins", "ServiceAccount",
		// Webhooks (and aggregated APIs) named by a Service are called at
		// its EndpointSlices' addresses rather than its ClusterIP, which
		// nothing routes here: a Service without a selector and a slice
		// with this machine's address reach a webhook server of a test.
		"--enable-aggregator-routing=true",
	}, c.opts.ExtraAPIServerArgs...)
	return c.startAPIServer(ctx)
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	p, err := startProcess("etcd", c.bins.Etcd, c.etcdArgs, filepath.Join(c.Dir, "etcd.log"))
	if err != nil {
		return err
	}
	c.setProcess(&c.etcd, p)
	return waitHTTP(ctx, p, c.etcdURL+"/health", "")
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	p, err := startProcess("kube-apiserver", c.bins.APIServer, c.apiArgs, filepath.Join(c.Dir, "kube-apiserver.log"))
	if err != nil {
		return err
	}
	c.setProcess(&c.apiserver, p)
	return waitHTTP(ctx, p, c.APIServerURL+"/readyz", c.Token)
}

func (c *Cluster) setProcess(slot **process, p *process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*slot = p
}

// probeTransport is for the readiness probes only: they run before the
// apiserver's certificate is known to the caller. No keep-alives, so that no
// idle connection (and its goroutines) outlives a probe.
var probeTransport = &http.Transport{
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // loopback readiness probe
	DisableKeepAlives: true,
}

// waitHTTP polls url until it answers 200, the process exits, or ctx ends.
func waitHTTP(ctx context.Context, p *process, url, token string) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: probeTransport}
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if resp, err := client.Do(req); err != nil {
			last = err.Error()
		} else {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		}
		select {
		case <-p.done:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("%s not ready at %s (last answer: %s): %w; see %s:\n%s",
				p.name, url, last, ctx.Err(), p.logPath, p.logTail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *Cluster) waitDefaultNamespace(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	for {
		_, err := cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) && ctx.Err() == nil {
			// A TLS or authentication problem will not go away by waiting.
			if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) || strings.Contains(err.Error(), "x509") {
				return fmt.Errorf("reading the default namespace with the generated credentials: %w", err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the default namespace did not appear (last error: %v): %w", err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// RESTConfig returns a new client configuration for the admin user.
func (c *Cluster) RESTConfig() *rest.Config {
	return restConfig(c.APIServerURL, c.Token, c.caData)
}

// StopAPIServer stops only the kube-apiserver (SIGTERM, then SIGKILL after the
// grace period), leaving etcd and the data in place, to test how clients cope
// with an apiserver outage. StartAPIServer brings it back on the same port.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	p := c.apiserver
	c.mu.Unlock()
	if p == nil {
		return errors.New("the apiserver is not running")
	}
	return p.stop(c.opts.StopGrace)
}

// StartAPIServer starts the kube-apiserver again after StopAPIServer, with the
// same port, certificates and token, and waits until it is ready.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	p, stopped := c.apiserver, c.stopped
	c.mu.Unlock()
	if stopped {
		return errors.New("the cluster is stopped")
	}
	if p != nil && !p.exited() {
		return errors.New("the apiserver is already running; call StopAPIServer first")
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	return c.startAPIServer(ctx)
}

// StopEtcd stops only etcd (SIGTERM, then SIGKILL after the grace period),
// keeping its data, to test how the apiserver and its clients cope with a
// storage outage. StartEtcd brings it back on the same ports.
func (c *Cluster) StopEtcd() error {
	c.mu.Lock()
	p := c.etcd
	c.mu.Unlock()
	if p == nil {
		return errors.New("etcd is not running")
	}
	return p.stop(c.opts.StopGrace)
}

// StartEtcd starts etcd again after StopEtcd, with the same ports and data,
// and waits until it is healthy.
func (c *Cluster) StartEtcd(ctx context.Context) error {
	c.mu.Lock()
	p, stopped := c.etcd, c.stopped
	c.mu.Unlock()
	if stopped {
		return errors.New("the cluster is stopped")
	}
	if p != nil && !p.exited() {
		return errors.New("etcd is already running; call StopEtcd first")
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	return c.startEtcd(ctx)
}

// Stop stops the apiserver, then etcd (SIGTERM, then SIGKILL after the grace
// period), and removes a temporary Dir unless Options.KeepDir. It is safe to
// call more than once.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return nil
	}
	c.stopped = true
	c.mu.Unlock()

	err := c.stopServers()
	if c.ownDir {
		if c.opts.KeepDir {
			c.opts.Logf.printf("cluster stopped; its directory is kept: %s", c.Dir)
		} else if rmErr := os.RemoveAll(c.Dir); rmErr != nil {
			err = errors.Join(err, fmt.Errorf("removing the cluster directory: %w", rmErr))
		}
	}
	return err
}

// stopServers stops the apiserver before etcd, so that the apiserver does not
// spend its shutdown complaining about a vanished storage.
func (c *Cluster) stopServers() error {
	c.mu.Lock()
	api, etcd := c.apiserver, c.etcd
	c.mu.Unlock()
	var errs []error
	for _, p := range []*process{api, etcd} {
		if p != nil {
			errs = append(errs, p.stop(c.opts.StopGrace))
		}
	}
	return errors.Join(errs...)
}

// process is one running server.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited and been reaped
	err     error         // Wait's result, valid once done is closed
}

func startProcess(name, bin string, args []string, logPath string) (*process, error) {
	// Append, so that the log of a restarted apiserver keeps its earlier life.
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("creating the %s log: %w", name, err)
	}
	defer logFile.Close() // the child has its own copy of the descriptor

	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C in the terminal reaches only the test
		// binary, which stops the servers in order instead of them dying at once.
		Setpgid: true,
		// If the test binary dies (panic, SIGKILL, timeout) the servers die too
		// rather than holding ports and CPU. See startOnSpawnerThread.
		Pdeathsig: syscall.SIGKILL,
	}
	fmt.Fprintf(logFile, "---- %s: starting %s %s\n", time.Now().Format(time.RFC3339), bin, strings.Join(args, " "))
	if err := startOnSpawnerThread(cmd); err != nil {
		return nil, fmt.Errorf("starting %s (%s): %w", name, bin, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

var (
	spawnOnce sync.Once
	spawnReqs chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// startOnSpawnerThread starts cmd from one OS thread that lives as long as the
// process. Linux delivers the parent-death signal when the *thread* that forked
// the child exits, not the process (golang/go#27505), and the Go runtime ends a
// thread when a goroutine locked to it returns; if any code in the test binary
// did that on a thread that had once started a server, the server would be
// killed mid-test. A goroutine that locks its thread and never returns owns a
// thread no other goroutine runs on, so only the process's death can end it.
func startOnSpawnerThread(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReqs = make(chan spawnReq)
		go spawner(spawnReqs)
	})
	req := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawnReqs <- req
	return <-req.done
}

func spawner(reqs <-chan spawnReq) {
	runtime.LockOSThread()
	// Deliberately never unlocked and never returning: see startOnSpawnerThread.
	for req := range reqs {
		req.done <- req.cmd.Start()
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// exitError describes an unexpected exit, with the log's tail; it wraps
// errPortInUse when the log says a port was taken.
func (p *process) exitError() error {
	logTail := p.logTail()
	err := fmt.Errorf("%s exited during start-up (%v); see %s:\n%s", p.name, p.err, p.logPath, logTail)
	if strings.Contains(logTail, "address already in use") {
		err = fmt.Errorf("%w: %w", errPortInUse, err)
	}
	return err
}

func (p *process) logTail() string {
	data, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(log unreadable: %v)", err)
	}
	return tail(string(data), 30)
}

// stop sends SIGTERM to the process group, then SIGKILL after grace, and waits
// until the process is reaped, so that no pid or port outlives the call.
func (p *process) stop(grace time.Duration) error {
	if p.exited() {
		return nil
	}
	pgid := p.cmd.Process.Pid // Setpgid: the group id is the leader's pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) did not exit after SIGKILL", p.name, pgid)
	}
}

// clients returns the dynamic client and REST mapper used by Apply and Delete.
func (c *Cluster) clients() (dynamic.Interface, *restmapper.DeferredDiscoveryRESTMapper, error) {
	c.clientsOnce.Do(func() {
		cfg := c.RESTConfig()
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			c.clientsErr = err
			return
		}
		c.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
		c.dyn, c.clientsErr = dynamic.NewForConfig(cfg)
	})
	return c.dyn, c.mapper, c.clientsErr
}
