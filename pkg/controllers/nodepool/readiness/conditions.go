package readiness

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// nodeClassKind is the only node class kind Lathe knows, in group awsv1.Group.
const nodeClassKind = "EC2NodeClass"

// Condition reasons, as Karpenter spells them.
const (
	reasonValidationSucceeded  = "ValidationSucceeded"
	reasonValidationFailed     = "NodePoolValidationFailed"
	reasonNodeClassReady       = "NodeClassReady"
	reasonNodeClassNotFound    = "NodeClassNotFound"
	reasonNodeClassNotReady    = "NodeClassNotReady"
	reasonNodeClassTerminating = "NodeClassTerminating"
	reasonReady                = "Ready"
	reasonUnhealthyDependents  = "UnhealthyDependents"
	reasonReconcilingDeps      = "ReconcilingDependents"
)

// readyDependents are the conditions Ready summarises.
var readyDependents = [...]string{v1.ConditionTypeValidationSucceeded, v1.ConditionTypeNodeClassReady}

// conditionSetter writes a pool's conditions, stamping transitions with one time.
type conditionSetter struct {
	np  *v1.NodePool
	now time.Time
}

func (s conditionSetter) set(condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.np.Status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: s.np.Generation,
		LastTransitionTime: metav1.NewTime(s.now),
	})
}

// setValidation sets ValidationSucceeded from the spec checks.
func (s conditionSetter) setValidation() {
	if problems := validate(s.np); len(problems) > 0 {
		s.set(v1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, reasonValidationFailed, joinProblems(problems))
		return
	}
	s.set(v1.ConditionTypeValidationSucceeded, metav1.ConditionTrue, reasonValidationSucceeded, "")
}

// setNodeClassReady mirrors the referenced EC2NodeClass's readiness and records its generation.
func (s conditionSetter) setNodeClassReady(ctx context.Context, reader client.Reader) error {
	ref := s.np.Spec.Template.Spec.NodeClassRef
	if ref == nil || ref.Group != awsv1.Group || ref.Kind != nodeClassKind {
		s.set(v1.ConditionTypeNodeClassReady, metav1.ConditionFalse, reasonNodeClassNotFound,
			fmt.Sprintf("node class kind %s is not supported, only %s/%s", describeRef(ref), awsv1.Group, nodeClassKind))
		return nil
	}
	class := &awsv1.EC2NodeClass{}
	if err := reader.Get(ctx, client.ObjectKey{Name: ref.Name}, class); err != nil {
		if errors.IsNotFound(err) {
			s.set(v1.ConditionTypeNodeClassReady, metav1.ConditionFalse, reasonNodeClassNotFound,
				fmt.Sprintf("EC2NodeClass %q not found on cluster", ref.Name))
			return nil
		}
		return fmt.Errorf("getting ec2nodeclass, %w", err)
	}
	s.np.Status.NodeClassObservedGeneration = class.Generation
	if !class.DeletionTimestamp.IsZero() {
		s.set(v1.ConditionTypeNodeClassReady, metav1.ConditionFalse, reasonNodeClassTerminating, "EC2NodeClass is terminating")
		return nil
	}
	ready := meta.FindStatusCondition(class.Status.Conditions, awsv1.ConditionTypeReady)
	switch {
	case ready == nil:
		s.set(v1.ConditionTypeNodeClassReady, metav1.ConditionFalse, reasonNodeClassNotReady, "EC2NodeClass has no Ready condition yet")
	case ready.Status == metav1.ConditionTrue:
		s.set(v1.ConditionTypeNodeClassReady, metav1.ConditionTrue, reasonNodeClassReady, "")
	default:
		message := "EC2NodeClass is not ready"
		if ready.Message != "" {
			message += ": " + ready.Message
		}
		s.set(v1.ConditionTypeNodeClassReady, metav1.ConditionFalse, reasonNodeClassNotReady, message)
	}
	return nil
}

// setReady sets Ready from its dependents: False if any is False, Unknown if any is missing or Unknown,
// True otherwise.
func (s conditionSetter) setReady() {
	var unhealthy, pending []string
	for _, t := range readyDependents {
		c := meta.FindStatusCondition(s.np.Status.Conditions, t)
		switch {
		case c == nil || c.Status == metav1.ConditionUnknown:
			pending = append(pending, t+"=Unknown")
		case c.Status == metav1.ConditionFalse:
			unhealthy = append(unhealthy, t+"=False")
		}
	}
	switch {
	case len(unhealthy) > 0:
		s.set(v1.ConditionTypeReady, metav1.ConditionFalse, reasonUnhealthyDependents, strings.Join(unhealthy, ", "))
	case len(pending) > 0:
		s.set(v1.ConditionTypeReady, metav1.ConditionUnknown, reasonReconcilingDeps, strings.Join(pending, ", "))
	default:
		s.set(v1.ConditionTypeReady, metav1.ConditionTrue, reasonReady, "")
	}
}

func describeRef(ref *v1.NodeClassReference) string {
	if ref == nil {
		return "<none>"
	}
	return ref.Group + "/" + ref.Kind
}
