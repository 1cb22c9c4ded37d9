package userdata

import "fmt"

// CheckCluster says why a node that read n would not join the cluster with this name, endpoint and CA bundle
// (base64 PEM): it names another cluster, API server or CA. An endpoint or CA the document leaves out matches,
// because bootstrap.sh and Bottlerocket look those up from EKS themselves.
func (n Node) CheckCluster(name, endpoint, caBundle string) error {
	if n.ClusterName != name {
		return fmt.Errorf("user data names cluster %q, not %q", n.ClusterName, name)
	}
	if n.ClusterEndpoint != "" && n.ClusterEndpoint != endpoint {
		return fmt.Errorf("user data names API server %q, not %q", n.ClusterEndpoint, endpoint)
	}
	if n.ClusterCABundle != "" && n.ClusterCABundle != caBundle {
		return fmt.Errorf("user data carries another cluster CA bundle than cluster %q's", name)
	}
	return nil
}
