package provisioning

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/simulation/solver"
)

// NewNodeClaim builds the NodeClaim object for a planned claim of the pool: named <nodepool>-<suffix> by the
// API server, owned by the pool, carrying the pool template's metadata, taints, node class and timeouts, the
// plan's narrowed requirements (which name the instance types that fit) and the resources its pods request.
// It carries the termination finalizer from the start: the lifecycle controller would add it before the
// launch anyway, and under load that write is a round trip to the API server on every launch's way.
func NewNodeClaim(pool *v1.NodePool, plan solver.NodeClaimPlan) (*v1.NodeClaim, error) {
	tmpl := pool.Spec.Template
	labels := maps.Clone(tmpl.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	var requirements []v1.NodeSelectorRequirementWithMinValues
	for _, r := range plan.Requirements {
		if r.Key == v1.LabelHostname {
			continue // a hostname is not known before launch; the CRD forbids requiring one
		}
		requirements = append(requirements, r)
		if r.Operator == corev1.NodeSelectorOpIn && len(r.Values) == 1 {
			labels[r.Key] = r.Values[0]
		}
	}
	labels[v1.NodePoolLabelKey] = pool.Name
	annotations := maps.Clone(tmpl.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1.NodePoolHashAnnotationKey] = pool.Hash()
	annotations[v1.NodePoolHashVersionAnnotationKey] = v1.NodePoolHashVersion
	if plan.MinValuesRelaxed {
		annotations[v1.NodeClaimMinValuesRelaxedAnnotationKey] = "true"
	}
	return &v1.NodeClaim{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: pool.Name + "-",
			Labels:       labels,
			Annotations:  annotations,
			Finalizers:   []string{v1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         v1.SchemeGroupVersion.String(),
				Kind:               "NodePool",
				Name:               pool.Name,
				UID:                pool.UID,
				BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: v1.NodeClaimSpec{
			Taints:                 tmpl.Spec.Taints,
			StartupTaints:          tmpl.Spec.StartupTaints,
			Requirements:           requirements,
			Resources:              v1.ResourceRequirements{Requests: plan.Requests},
			NodeClassRef:           tmpl.Spec.NodeClassRef,
			TerminationGracePeriod: tmpl.Spec.TerminationGracePeriod,
			ExpireAfter:            tmpl.Spec.ExpireAfter,
		},
	}, nil
}
