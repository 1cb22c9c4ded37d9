// Package environment starts a real etcd and kube-apiserver (the binaries make tools builds into bin/) with
// Lathe's CRDs installed, for integration tests. It wraps controller-runtime's envtest.
package environment

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/lathe-autoscaler/lathe/pkg/apis/crds"
	"github.com/lathe-autoscaler/lathe/pkg/apis/scheme"
)

// Environment is a running etcd and kube-apiserver with Lathe's CRDs installed.
type Environment struct {
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme

	env *envtest.Environment
}

// Start launches etcd and kube-apiserver on free loopback ports and installs the CRDs. Call Stop when done.
func Start() (*Environment, error) {
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	defs, err := crds.CRDs()
	if err != nil {
		return nil, err
	}
	s, err := scheme.New()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: binDir,
		CRDs:                  defs,
		ErrorIfCRDPathMissing: true,
		Scheme:                s,
	}
	cfg, err := env.Start()
	if err != nil {
		// envtest may have started etcd and kube-apiserver before failing (for example on a CRD it rejects).
		_ = env.Stop()
		return nil, fmt.Errorf("starting etcd and kube-apiserver from %s, %w", binDir, err)
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("creating client, %w", err)
	}
	return &Environment{Config: cfg, Client: c, Scheme: s, env: env}, nil
}

// Stop stops kube-apiserver and etcd and removes their data.
func (e *Environment) Stop() error {
	if err := e.env.Stop(); err != nil {
		return fmt.Errorf("stopping test control plane, %w", err)
	}
	return nil
}

// CRDs returns the installed CustomResourceDefinitions.
func (e *Environment) CRDs() []*apiextensionsv1.CustomResourceDefinition { return e.env.CRDs }

// BinDir finds the bin/ folder with the control-plane binaries: $LATHE_BIN_DIR if set, else bin/ in the
// nearest folder above the working directory that has one with a kube-apiserver in it.
func BinDir() (string, error) {
	if dir := os.Getenv("LATHE_BIN_DIR"); dir != "" {
		return dir, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("finding working directory, %w", err)
	}
	for {
		candidate := filepath.Join(dir, "bin")
		if _, err := os.Stat(filepath.Join(candidate, "kube-apiserver")); err == nil {
			return candidate, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no bin/kube-apiserver found above the working directory: run 'make tools' first")
		}
		dir = parent
	}
}
