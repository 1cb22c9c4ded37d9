package fakeaws

import (
	"net/http"
	"strings"
)

// eksState is the EKS clusters DescribeCluster knows, by name.
type eksState struct {
	clusters map[string]Cluster
}

// Cluster is what EKS's DescribeCluster reports of a cluster (the parts Lathe reads).
type Cluster struct {
	Name string
	// Endpoint is the API server's URL.
	Endpoint string
	// CertificateAuthority is the base64 PEM bundle of the cluster's CA.
	CertificateAuthority string
	// ServiceIPv4CIDR is the Kubernetes service range (the cluster DNS address is derived from it).
	ServiceIPv4CIDR string
	Version         string
}

func init() {
	handleREST(http.MethodGet, "/clusters/", "DescribeCluster", (*Server).describeCluster)
}

// SetCluster makes DescribeCluster answer for the cluster.
func (s *Server) SetCluster(c Cluster) {
	s.withState(func(st *state) {
		if st.eks.clusters == nil {
			st.eks.clusters = map[string]Cluster{}
		}
		st.eks.clusters[c.Name] = c
	})
}

type eksCluster struct {
	Name                 string            `json:"name"`
	Arn                  string            `json:"arn"`
	Endpoint             string            `json:"endpoint"`
	Status               string            `json:"status"`
	Version              string            `json:"version"`
	CertificateAuthority map[string]string `json:"certificateAuthority"`
	KubernetesNetwork    map[string]string `json:"kubernetesNetworkConfig"`
}

func (s *Server) describeCluster(name string, _ *http.Request) (any, error) {
	name = strings.Trim(name, "/")
	var (
		c  Cluster
		ok bool
	)
	s.withState(func(st *state) { c, ok = st.eks.clusters[name] })
	if !ok {
		return nil, notFoundf("ResourceNotFoundException", "No cluster found for name: %s.", name)
	}
	return map[string]eksCluster{"cluster": {
		Name:                 c.Name,
		Arn:                  "arn:aws:eks:" + s.opts.Region + ":000000000000:cluster/" + c.Name,
		Endpoint:             c.Endpoint,
		Status:               "ACTIVE",
		Version:              c.Version,
		CertificateAuthority: map[string]string{"data": c.CertificateAuthority},
		KubernetesNetwork:    map[string]string{"serviceIpv4Cidr": c.ServiceIPv4CIDR, "ipFamily": "ipv4"},
	}}, nil
}
