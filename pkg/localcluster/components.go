package localcluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// Component binary names, as make tools writes them into bin/.
const (
	etcdBinary              = "etcd"
	apiServerBinary         = "kube-apiserver"
	controllerManagerBinary = "kube-controller-manager"
	schedulerBinary         = "kube-scheduler"
	kwokBinary              = "kwok"
)

// Binaries are the programs Start runs, all looked up in Options.BinDir.
func Binaries() []string {
	return []string{etcdBinary, apiServerBinary, controllerManagerBinary, schedulerBinary, kwokBinary}
}

const (
	// FakeNodeAnnotation marks the Nodes kwok acts as the kubelet for: annotate a Node with
	// FakeNodeAnnotation=FakeNodeAnnotationValue and kwok makes it Ready and runs the pods bound to it.
	FakeNodeAnnotation = "kwok.x-k8s.io/node"
	// FakeNodeAnnotationValue is the value of FakeNodeAnnotation kwok selects.
	FakeNodeAnnotationValue = "fake"

	// serviceCIDR holds the cluster IPs of Services; it must not overlap kwok's default pod CIDR 10.0.0.0/24.
	serviceCIDR = "10.96.0.0/16"
	// serviceAccountIssuer is the issuer of the cluster's service account tokens.
	serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
	// frontProxyUser is the identity kube-apiserver proxies to aggregated API servers with.
	frontProxyUser = "front-proxy-client"
)

// component is one process of the cluster and the HTTP endpoint that answers 200 once it is ready.
type component struct {
	command  command
	readyURL string
}

// layout is where one cluster keeps its files and which ports its components listen on.
type layout struct {
	binDir, dir string
	pki         *pki

	etcdPort, etcdPeerPort, apiServerPort, controllerManagerPort, schedulerPort, kwokPort int

	apiServerServing, controllerManagerServing, schedulerServing     keyPair
	frontProxyClient                                                 keyPair
	controllerManagerKubeconfig, schedulerKubeconfig, kwokKubeconfig string
	stagesFile                                                       string
	// auditPolicyFile and auditLogPath, when set, turn on kube-apiserver's audit log.
	auditPolicyFile, auditLogPath string
}

func (l *layout) apiServerURL() string { return "https://" + hostPort(l.apiServerPort) }

func (l *layout) etcd() component {
	client := "http://" + hostPort(l.etcdPort)
	peer := "http://" + hostPort(l.etcdPeerPort)
	return component{
		command: command{name: etcdBinary, path: l.bin(etcdBinary), args: []string{
			"--name=lathe-local",
			"--data-dir=" + filepath.Join(l.dir, "etcd"),
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=lathe-local=" + peer,
			// The data is thrown away with the cluster, so durability is not worth the disk syncs.
			"--unsafe-no-fsync=true",
			"--log-level=warn",
		}},
		readyURL: client + "/health",
	}
}

func (l *layout) apiServer() component {
	c := component{
		command: command{name: apiServerBinary, path: l.bin(apiServerBinary), args: []string{
			"--etcd-servers=http://" + hostPort(l.etcdPort),
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(l.apiServerPort),
			"--cert-dir=" + filepath.Join(l.dir, apiServerBinary),
			"--tls-cert-file=" + l.apiServerServing.certFile,
			"--tls-private-key-file=" + l.apiServerServing.keyFile,
			"--client-ca-file=" + l.pki.caCertFile,
			"--service-account-issuer=" + serviceAccountIssuer,
			"--service-account-key-file=" + l.pki.serviceAccountKeyFile,
			"--service-account-signing-key-file=" + l.pki.serviceAccountKeyFile,
			"--service-cluster-ip-range=" + serviceCIDR,
			"--authorization-mode=RBAC",
			// The aggregation layer's front proxy. kube-controller-manager and kube-scheduler read this
			// CA from the extension-apiserver-authentication ConfigMap and log errors without end when
			// it is missing.
			"--requestheader-client-ca-file=" + l.pki.caCertFile,
			"--requestheader-allowed-names=" + frontProxyUser,
			"--requestheader-username-headers=X-Remote-User",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--proxy-client-cert-file=" + l.frontProxyClient.certFile,
			"--proxy-client-key-file=" + l.frontProxyClient.keyFile,
			"--allow-privileged=true",
			// The kubernetes Service would get the loopback address as its endpoint, which the
			// Endpoints validation rejects; nothing in a kwok cluster can reach it anyway.
			"--endpoint-reconciler-type=none",
			"--profiling=false",
		}},
		readyURL: l.apiServerURL() + "/readyz",
	}
	if l.auditLogPath != "" {
		// Blocking mode writes each event before the response, so the log is complete once a call returns.
		c.command.args = append(c.command.args, "--audit-policy-file="+l.auditPolicyFile, "--audit-log-path="+l.auditLogPath,
			"--audit-log-format=json", "--audit-log-mode=blocking")
	}
	return c
}

func (l *layout) controllerManager() component {
	return component{
		command: command{name: controllerManagerBinary, path: l.bin(controllerManagerBinary), args: []string{
			"--kubeconfig=" + l.controllerManagerKubeconfig,
			"--authentication-kubeconfig=" + l.controllerManagerKubeconfig,
			"--authorization-kubeconfig=" + l.controllerManagerKubeconfig,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(l.controllerManagerPort),
			"--cert-dir=" + filepath.Join(l.dir, controllerManagerBinary),
			"--tls-cert-file=" + l.controllerManagerServing.certFile,
			"--tls-private-key-file=" + l.controllerManagerServing.keyFile,
			"--leader-elect=false",
			"--service-account-private-key-file=" + l.pki.serviceAccountKeyFile,
			"--root-ca-file=" + l.pki.caCertFile,
			"--cluster-signing-cert-file=" + l.pki.caCertFile,
			"--cluster-signing-key-file=" + l.pki.caKeyFile,
			"--controllers=*",
			"--profiling=false",
			// The default 20 QPS makes a 1,000-replica Deployment take a minute just to create its pods.
			"--kube-api-qps=500",
			"--kube-api-burst=1000",
		}},
		readyURL: "https://" + hostPort(l.controllerManagerPort) + "/healthz",
	}
}

func (l *layout) scheduler() component {
	return component{
		command: command{name: schedulerBinary, path: l.bin(schedulerBinary), args: []string{
			"--kubeconfig=" + l.schedulerKubeconfig,
			"--authentication-kubeconfig=" + l.schedulerKubeconfig,
			"--authorization-kubeconfig=" + l.schedulerKubeconfig,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(l.schedulerPort),
			"--cert-dir=" + filepath.Join(l.dir, schedulerBinary),
			"--tls-cert-file=" + l.schedulerServing.certFile,
			"--tls-private-key-file=" + l.schedulerServing.keyFile,
			"--leader-elect=false",
			"--profiling=false",
			// The default 50 QPS caps binding at 50 pods a second.
			"--kube-api-qps=500",
			"--kube-api-burst=1000",
		}},
		// readyz includes the check that the scheduler's informers have synced.
		readyURL: "https://" + hostPort(l.schedulerPort) + "/readyz",
	}
}

func (l *layout) kwok() component {
	home := filepath.Join(l.dir, kwokBinary)
	return component{
		command: command{
			name: kwokBinary,
			path: l.bin(kwokBinary),
			args: []string{
				"--kubeconfig=" + l.kwokKubeconfig,
				"--config=" + l.stagesFile,
				"--manage-nodes-with-annotation-selector=" + FakeNodeAnnotation + "=" + FakeNodeAnnotationValue,
				// Without an address kwok serves nothing; with one it serves /healthz, on a port of ours.
				"--server-address=" + hostPort(l.kwokPort),
			},
			// kwok also loads ~/.kwok/kwok.yaml when it exists; a private home keeps the user's out.
			env: []string{"HOME=" + home},
		},
		readyURL: "http://" + hostPort(l.kwokPort) + "/healthz",
	}
}

func (l *layout) bin(name string) string { return filepath.Join(l.binDir, name) }

func hostPort(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }

// checkBinaries fails with the make target to run when a binary is missing from binDir.
func checkBinaries(binDir string, names ...string) error {
	for _, name := range names {
		if err := checkExecutable(filepath.Join(binDir, name), "run 'make tools' to build the local cluster binaries"); err != nil {
			return err
		}
	}
	return nil
}

// checkExecutable fails, with hint on how to get it, unless path is an executable file.
func checkExecutable(path, hint string) error {
	info, err := os.Stat(path)
	if err == nil && (info.IsDir() || info.Mode().Perm()&0o111 == 0) {
		err = errors.New("not an executable file")
	}
	if err != nil {
		return fmt.Errorf("checking %s (%s), %w", path, hint, err)
	}
	return nil
}
