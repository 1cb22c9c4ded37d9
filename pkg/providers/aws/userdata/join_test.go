package userdata

import (
	"strings"
	"testing"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// TestCheckCluster: a node joins only the cluster its user data names.
func TestCheckCluster(t *testing.T) {
	o := options(awsv1.AMIFamilyAL2023)
	n := renderParse(t, o)
	if err := n.CheckCluster("demo", o.ClusterEndpoint, testCA); err != nil {
		t.Errorf("own cluster: %v", err)
	}
	for _, tc := range []struct{ name, endpoint, ca, want string }{
		{"other", o.ClusterEndpoint, testCA, `names cluster "demo", not "other"`},
		{"demo", "https://other.example.com", testCA, "names API server"},
		{"demo", o.ClusterEndpoint, "b3RoZXI=", "another cluster CA bundle"},
	} {
		if err := n.CheckCluster(tc.name, tc.endpoint, tc.ca); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckCluster(%q, %q, %q) = %v, want an error containing %q", tc.name, tc.endpoint, tc.ca, err, tc.want)
		}
	}
	lookedUp := Node{ClusterName: "demo"}
	if err := lookedUp.CheckCluster("demo", o.ClusterEndpoint, testCA); err != nil {
		t.Errorf("endpoint and CA left to the node: %v", err)
	}
}
