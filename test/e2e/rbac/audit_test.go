package rbac_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// grant names one verb on one resource (with its subresource) of one API group: "list core/nodes",
// "create core/pods/eviction", "update coordination.k8s.io/leases".
func grant(verb, group, resource string) string {
	if group == "" {
		group = "core"
	}
	return verb + " " + group + "/" + resource
}

// readAudit returns what the user did according to the audit log (as grants), and the grants the API
// server denied them, each with the number of denials and the first denied request.
func readAudit(path, user string) (used map[string]bool, denied map[string]string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	used, denied = map[string]bool{}, map[string]string{}
	counts := map[string]int{}
	scanner := bufio.NewScanner(f)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(scanner.Bytes(), &e); err != nil {
			return nil, nil, fmt.Errorf("decoding audit event, %w", err)
		}
		if e.User.Username != user || e.ObjectRef == nil {
			continue
		}
		resource := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			resource += "/" + e.ObjectRef.Subresource
		}
		g := grant(e.Verb, e.ObjectRef.APIGroup, resource)
		if e.ResponseStatus != nil && e.ResponseStatus.Code == 403 {
			if counts[g]++; counts[g] == 1 {
				denied[g] = fmt.Sprintf("%s (%s)", e.RequestURI, e.ResponseStatus.Message)
			}
			continue
		}
		used[g] = true
	}
	for g, n := range counts {
		denied[g] = fmt.Sprintf("%d times, first %s", n, denied[g])
	}
	return used, denied, scanner.Err()
}

// grants expands the rules of the rendered ClusterRoles and Roles into grants.
func grants(t *testing.T, objs []*unstructured.Unstructured) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, o := range objs {
		if o.GetKind() != "ClusterRole" && o.GetKind() != "Role" {
			continue
		}
		role := &rbacv1.ClusterRole{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
			t.Fatalf("decoding %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		for _, r := range role.Rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, v := range r.Verbs {
						out[grant(v, g, res)] = true
					}
				}
			}
		}
	}
	return out
}

// runGo runs the go command in dir and returns its combined output.
func runGo(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	return cmd.CombinedOutput()
}
