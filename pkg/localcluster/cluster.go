package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

const (
	defaultReadyTimeout    = 2 * time.Minute
	defaultStopGracePeriod = 15 * time.Second
)

// Options configures Start.
type Options struct {
	// BinDir holds the etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok binaries.
	BinDir string
	// WorkDir is where the cluster's data folder is made; it gets a new folder each Start, which Stop
	// removes. Defaults to the system temp folder.
	WorkDir string
	// KubeconfigPath, if set, is where the admin kubeconfig is written as well; Stop removes it.
	KubeconfigPath string
	// Logs receives the output of every component, one line at a time, prefixed with "[component] ".
	// Nil discards it; the last lines of a component that fails are part of the error either way.
	Logs io.Writer
	// ReadyTimeout bounds the wait for each component to become ready. Defaults to 2 minutes.
	ReadyTimeout time.Duration
	// StopGracePeriod is how long Stop waits after SIGTERM before it sends SIGKILL. Defaults to 15s.
	StopGracePeriod time.Duration
	// KeepWorkDir leaves the data folder in place after Stop, for debugging.
	KeepWorkDir bool
	// AuditPolicyFile and AuditLogPath turn on kube-apiserver's audit log (--audit-policy-file,
	// --audit-log-path, JSON lines, written before each response returns); give both or neither. Off by
	// default.
	AuditPolicyFile, AuditLogPath string
}

// Cluster is a running local cluster. Stop it when done. When Start fails, it stops whatever it had
// started itself and returns no Cluster.
type Cluster struct {
	opts       Options
	dir        string
	kubeconfig string
	restConfig *rest.Config

	mu    sync.Mutex
	procs []*Process
	err   error

	failed   chan struct{}
	failOnce sync.Once
	stopOnce sync.Once
	stopErr  error
}

// Start runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok, and returns once
// every one of them is ready and the controller manager has created the default service account. ctx
// bounds the start only; the cluster runs until Stop.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	opts = opts.withDefaults()
	if (opts.AuditPolicyFile == "") != (opts.AuditLogPath == "") {
		return nil, errors.New("audit log: give both AuditPolicyFile and AuditLogPath, or neither")
	}
	if err := checkBinaries(opts.BinDir, Binaries()...); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.WorkDir, 0o750); err != nil {
		return nil, fmt.Errorf("creating work folder, %w", err)
	}
	dir, err := os.MkdirTemp(opts.WorkDir, "cluster-")
	if err != nil {
		return nil, fmt.Errorf("creating cluster data folder, %w", err)
	}
	c := &Cluster{opts: opts, dir: dir, failed: make(chan struct{})}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Stop())
		}
	}()
	l, admin, err := prepare(dir, opts.BinDir)
	if err != nil {
		return nil, err
	}
	l.auditPolicyFile, l.auditLogPath = opts.AuditPolicyFile, opts.AuditLogPath
	c.restConfig = restConfig(l.apiServerURL(), l.pki.caPEM, admin)
	c.kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.kubeconfig, l.apiServerURL(), l.pki.caPEM, admin); err != nil {
		return nil, err
	}
	client, err := readyClient(l.pki, admin)
	if err != nil {
		return nil, err
	}
	logs := newSyncWriter(opts.Logs)
	for _, group := range [][]component{{l.etcd()}, {l.apiServer()}, {l.controllerManager(), l.scheduler(), l.kwok()}} {
		if err := c.startGroup(ctx, group, logs, client); err != nil {
			return nil, err
		}
	}
	// The controller manager is healthy before its controllers have done anything; the default service
	// account shows they run, and pods in the default namespace are rejected until it exists.
	sa := l.apiServerURL() + "/api/v1/namespaces/default/serviceaccounts/default"
	if err := waitFor(ctx, "the default service account", opts.ReadyTimeout, statusCheck(client, sa), c.Processes()...); err != nil {
		return nil, err
	}
	if opts.KubeconfigPath != "" {
		if err := writeKubeconfig(opts.KubeconfigPath, l.apiServerURL(), l.pki.caPEM, admin); err != nil {
			return nil, err
		}
		c.kubeconfig = opts.KubeconfigPath
	}
	for _, p := range c.Processes() {
		go c.watch(p)
	}
	logr.FromContextOrDiscard(ctx).Info("Local cluster ready", "server", l.apiServerURL(), "kubeconfig", c.kubeconfig, "dataDir", dir)
	return c, nil
}

func (o Options) withDefaults() Options {
	if o.WorkDir == "" {
		o.WorkDir = os.TempDir()
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = defaultReadyTimeout
	}
	if o.StopGracePeriod <= 0 {
		o.StopGracePeriod = defaultStopGracePeriod
	}
	return o
}

// startGroup starts components that do not depend on each other, then waits until all are ready.
func (c *Cluster) startGroup(ctx context.Context, group []component, logs io.Writer, client *http.Client) error {
	log := logr.FromContextOrDiscard(ctx)
	for _, comp := range group {
		comp.command.logs, comp.command.grace = logs, c.opts.StopGracePeriod
		p, err := startProcess(comp.command)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.procs = append(c.procs, p)
		c.mu.Unlock()
		log.V(1).Info("Started component", "component", p.Name(), "pid", p.PID())
	}
	started := c.Processes()
	for _, comp := range group {
		what := comp.command.name + " to become ready"
		if err := waitFor(ctx, what, c.opts.ReadyTimeout, statusCheck(client, comp.readyURL), started...); err != nil {
			return err
		}
		log.V(1).Info("Component ready", "component", comp.command.name)
	}
	return nil
}

// watch records the first component that exits while the cluster should be running.
func (c *Cluster) watch(p *Process) {
	<-p.Done()
	if err := p.Err(); err != nil {
		c.failOnce.Do(func() {
			c.mu.Lock()
			c.err = err
			c.mu.Unlock()
			close(c.failed)
		})
	}
}

// Kubeconfig is the path of the admin kubeconfig: Options.KubeconfigPath when set.
func (c *Cluster) Kubeconfig() string { return c.kubeconfig }

// RESTConfig returns a copy of the admin client configuration (user admin in group system:masters).
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// DataDir is the folder with the cluster's data, certificates and kubeconfigs.
func (c *Cluster) DataDir() string { return c.dir }

// Processes returns the component processes started so far, in start order.
func (c *Cluster) Processes() []*Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.procs)
}

// Failed is closed when a component exits by itself, without Stop; Err then says which and why.
func (c *Cluster) Failed() <-chan struct{} { return c.failed }

// Err is nil until a component exits by itself; then it describes the first one that did.
func (c *Cluster) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Stop stops every component, latest started first, waits until each one is reaped, and removes the
// data folder and the kubeconfig written to Options.KubeconfigPath. It is safe to call more than once.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.stop() })
	return c.stopErr
}

func (c *Cluster) stop() error {
	var errs []error
	procs := c.Processes()
	// Everything else talks to kube-apiserver and kube-apiserver to etcd, so those two go last; the
	// clients can stop together.
	var clients, servers []*Process
	for _, p := range procs {
		if p.Name() == etcdBinary || p.Name() == apiServerBinary {
			servers = append(servers, p)
		} else {
			clients = append(clients, p)
		}
	}
	errs = append(errs, stopAll(clients))
	slices.Reverse(servers)
	for _, p := range servers {
		errs = append(errs, p.Stop())
	}
	if c.opts.KubeconfigPath != "" && c.kubeconfig == c.opts.KubeconfigPath {
		if err := os.Remove(c.opts.KubeconfigPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing kubeconfig, %w", err))
		}
	}
	if !c.opts.KeepWorkDir {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, fmt.Errorf("removing cluster data folder, %w", err))
		}
	}
	return errors.Join(errs...)
}

// stopAll stops the processes in parallel and waits for all of them.
func stopAll(procs []*Process) error {
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
