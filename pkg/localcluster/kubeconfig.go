package localcluster

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName names the cluster, user and context in every kubeconfig the launcher writes.
const contextName = "lathe-local"

// writeKubeconfig writes a self-contained kubeconfig (certificates inlined) for one client identity.
func writeKubeconfig(path, server string, caPEM []byte, client keyPair) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{
		ClientCertificateData: client.certPEM,
		ClientKeyData:         client.keyPEM,
	}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	cfg.CurrentContext = contextName
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating folder for kubeconfig %s, %w", path, err)
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s, %w", path, err)
	}
	return nil
}

// restConfig is the in-memory equivalent of the admin kubeconfig.
func restConfig(server string, caPEM []byte, client keyPair) *rest.Config {
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   caPEM,
			CertData: client.certPEM,
			KeyData:  client.keyPEM,
		},
	}
}
