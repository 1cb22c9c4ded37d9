package localcluster

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/lathe-autoscaler/lathe/pkg/loopback"
)

// loopbackHosts are the names a loopback serving certificate is valid for.
func loopbackHosts() []string { return []string{"127.0.0.1", "localhost"} }

// prepare picks the ports and writes the certificates, kubeconfigs and kwok stages of a new cluster
// into dir. It returns the layout and the admin client certificate.
func prepare(dir, binDir string) (*layout, keyPair, error) {
	p, err := newPKI(filepath.Join(dir, "pki"))
	if err != nil {
		return nil, keyPair{}, err
	}
	ports, err := loopback.FreePorts(6)
	if err != nil {
		return nil, keyPair{}, err
	}
	l := &layout{
		binDir: binDir, dir: dir, pki: p,
		etcdPort: ports[0], etcdPeerPort: ports[1], apiServerPort: ports[2],
		controllerManagerPort: ports[3], schedulerPort: ports[4], kwokPort: ports[5],
	}
	// The apiserver certificate also covers the in-cluster names of the kubernetes Service.
	if l.apiServerServing, err = p.serving(apiServerBinary, append(loopbackHosts(),
		"10.96.0.1", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local")...); err != nil {
		return nil, keyPair{}, err
	}
	if l.controllerManagerServing, err = p.serving(controllerManagerBinary, loopbackHosts()...); err != nil {
		return nil, keyPair{}, err
	}
	if l.schedulerServing, err = p.serving(schedulerBinary, loopbackHosts()...); err != nil {
		return nil, keyPair{}, err
	}
	if l.frontProxyClient, err = p.client("front-proxy", frontProxyUser); err != nil {
		return nil, keyPair{}, err
	}
	admin, err := p.client("admin", "lathe-local-admin", "system:masters")
	if err != nil {
		return nil, keyPair{}, err
	}
	// Each component connects as itself so the audit trail and the apiserver logs tell them apart. The
	// controller manager and kwok touch too many kinds of object for their bootstrap roles, so they
	// are cluster admins; the scheduler's built-in role is enough for it.
	clients := []struct {
		name, user string
		groups     []string
		kubeconfig *string
	}{
		{controllerManagerBinary, "system:kube-controller-manager", []string{"system:masters"}, &l.controllerManagerKubeconfig},
		{schedulerBinary, "system:kube-scheduler", nil, &l.schedulerKubeconfig},
		{kwokBinary, "kwok", []string{"system:masters"}, &l.kwokKubeconfig},
	}
	for _, cl := range clients {
		kp, err := p.client(cl.name, cl.user, cl.groups...)
		if err != nil {
			return nil, keyPair{}, err
		}
		*cl.kubeconfig = filepath.Join(dir, cl.name+".kubeconfig")
		if err := writeKubeconfig(*cl.kubeconfig, l.apiServerURL(), p.caPEM, kp); err != nil {
			return nil, keyPair{}, err
		}
	}
	for _, name := range Binaries() {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
			return nil, keyPair{}, fmt.Errorf("creating %s folder, %w", name, err)
		}
	}
	l.stagesFile = filepath.Join(dir, kwokBinary, "stages.yaml")
	if err := writeStages(l.stagesFile); err != nil {
		return nil, keyPair{}, err
	}
	return l, admin, nil
}
