// Command lathe-local starts a local Kubernetes cluster (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kwok from bin/), installs Lathe's CRDs and the tutorial NodePool, runs bin/lathe
// against it, and keeps everything running until interrupted. make run builds what it needs and starts it
// from the repository root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/go-logr/logr"

	"github.com/lathe-autoscaler/lathe/pkg/localcluster"
	"github.com/lathe-autoscaler/lathe/pkg/operator/logging"
)

type options struct {
	binDir, workDir, kubeconfig, latheBinary, nodePool, clusterName, amiID, logLevel, provider string
	noLathe                                                                                    bool
}

func main() {
	opts := parseFlags()
	log, flush, err := logging.New(logging.Config{Level: opts.logLevel, OutputPaths: []string{"stderr"}})
	if err != nil {
		_, _ = fmt.Fprintln(os.Stderr, "lathe-local: building logger,", err)
		os.Exit(2)
	}
	log = log.WithName("lathe-local")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(logr.NewContext(ctx, log), opts)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		log.Info("Interrupted before the local cluster was ready")
		err = nil
	}
	stop()
	if err != nil {
		log.Error(err, "Local cluster failed")
	}
	_ = flush()
	if err != nil {
		os.Exit(1)
	}
}

func parseFlags() options {
	binDir := os.Getenv("LATHE_BIN_DIR")
	if binDir == "" {
		binDir = "bin"
	}
	var o options
	flag.StringVar(&o.binDir, "bin-dir", binDir, "folder with etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (make tools)")
	flag.StringVar(&o.workDir, "work-dir", ".lathe", "folder for the cluster's data and logs")
	flag.StringVar(&o.kubeconfig, "kubeconfig", filepath.Join(".lathe", "kubeconfig"), "where to write the admin kubeconfig")
	flag.StringVar(&o.latheBinary, "lathe-binary", filepath.Join("bin", "lathe"), "the Lathe controller binary (make build)")
	flag.BoolVar(&o.noLathe, "no-lathe", false, "start the cluster only, to run Lathe yourself")
	flag.StringVar(&o.nodePool, "nodepool", filepath.Join("examples", "tutorial-nodepool.yaml"), "NodePool and EC2NodeClass manifest to apply")
	flag.StringVar(&o.clusterName, "cluster-name", "lathe-local", "CLUSTER_NAME for Lathe and the manifest")
	flag.StringVar(&o.amiID, "ami-id", "ami-0123456789abcdef0", "AMD_AMI_ID for the manifest")
	flag.StringVar(&o.logLevel, "log-level", "info", "lathe-local's own log level: debug, info or error")
	flag.StringVar(&o.provider, "provider", "sim", "cloud provider: sim (simulated) or aws (the AWS provider against an in-process fake AWS)")
	flag.Parse()
	return o
}

func run(ctx context.Context, o options) (err error) {
	log := logr.FromContextOrDiscard(ctx)
	manifest, err := os.ReadFile(o.nodePool)
	if err != nil {
		return fmt.Errorf("reading NodePool manifest, %w", err)
	}
	if !o.noLathe {
		// Fail before the cluster starts rather than after.
		if _, err := os.Stat(o.latheBinary); err != nil {
			return fmt.Errorf("finding the Lathe binary (run 'make build', or pass --no-lathe), %w", err)
		}
	}
	if err := os.MkdirAll(o.workDir, 0o750); err != nil {
		return fmt.Errorf("creating work folder, %w", err)
	}
	logPath := filepath.Join(o.workDir, "cluster.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return fmt.Errorf("creating cluster log, %w", err)
	}
	defer func() { err = errors.Join(err, logFile.Close()) }()

	log.Info("Starting local cluster", "binDir", o.binDir, "componentLogs", logPath)
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		BinDir: o.binDir, WorkDir: o.workDir, KubeconfigPath: o.kubeconfig, Logs: logFile,
	})
	if err != nil {
		return fmt.Errorf("starting local cluster, %w", err)
	}
	defer func() { err = errors.Join(err, cluster.Stop()) }()

	applier, err := localcluster.NewApplier(cluster.RESTConfig())
	if err != nil {
		return err
	}
	if err := applier.InstallCRDs(ctx); err != nil {
		return err
	}
	var latheEnv []string
	switch o.provider {
	case "sim":
	case "aws":
		fake, err := localcluster.StartFakeAWS(cluster, localcluster.FakeAWSOptions{ClusterName: o.clusterName, Log: log.WithName("fakeaws")})
		if err != nil {
			return fmt.Errorf("starting the fake AWS, %w", err)
		}
		defer fake.Close()
		log.Info("Serving the fake AWS", "url", fake.URL)
		o.amiID, latheEnv = fake.AMD64AMIID, fake.LatheEnv
	default:
		return fmt.Errorf("unknown provider %q: want sim or aws", o.provider)
	}
	vars := map[string]string{"CLUSTER_NAME": o.clusterName, "AMD_AMI_ID": o.amiID}
	if _, err := applier.Apply(ctx, manifest, vars); err != nil {
		return fmt.Errorf("applying %s, %w", o.nodePool, err)
	}

	var latheFailed <-chan struct{} // nil, so never ready, when Lathe is not run
	var lathe *localcluster.Lathe
	if !o.noLathe {
		lathe, err = localcluster.StartLathe(ctx, localcluster.LatheOptions{
			Binary: o.latheBinary, Kubeconfig: cluster.Kubeconfig(), ClusterName: o.clusterName, Logs: os.Stderr, Env: latheEnv,
		})
		if err != nil {
			return err
		}
		defer func() { err = errors.Join(err, lathe.Stop()) }()
		latheFailed = lathe.Done()
	}
	printNextSteps(os.Stdout, cluster.Kubeconfig(), logPath, o.clusterName, o.noLathe, latheEnv)

	select {
	case <-ctx.Done():
		log.Info("Stopping local cluster")
		return nil
	case <-cluster.Failed():
		return cluster.Err()
	case <-latheFailed:
		return lathe.Err()
	}
}

func printNextSteps(w io.Writer, kubeconfig, logPath, clusterName string, noLathe bool, latheEnv []string) {
	if abs, err := filepath.Abs(kubeconfig); err == nil {
		kubeconfig = abs
	}
	_, _ = fmt.Fprintf(w, "\nLocal cluster ready. In another terminal, from the repository root:\n\n")
	_, _ = fmt.Fprintf(w, "  export KUBECONFIG=%s\n", kubeconfig)
	if noLathe {
		_, _ = fmt.Fprintf(w, "  %sCLUSTER_NAME=%s bin/lathe &\n", envPrefix(latheEnv), clusterName)
	}
	for _, step := range []string{
		"bin/kubectl get nodepools",
		"bin/kubectl apply -f examples/inflate.yaml",
		"bin/kubectl scale deployment inflate --replicas 5",
		"bin/kubectl get nodeclaims,nodes -o wide",
	} {
		_, _ = fmt.Fprintf(w, "  %s\n", step)
	}
	_, _ = fmt.Fprintf(w, "\nThe cluster components log to %s.\n", logPath)
	_, _ = fmt.Fprintf(w, "Press Ctrl-C to stop everything.\n\n")
}

// envPrefix is the environment assignments for a shell command line, each followed by a space.
func envPrefix(env []string) string {
	var out string
	for _, kv := range env {
		out += kv + " "
	}
	return out
}
