package nodeclass

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// Condition reasons, as Karpenter spells them where it has one.
const (
	ReasonSubnetsNotFound         = "SubnetsNotFound"
	ReasonSecurityGroupsNotFound  = "SecurityGroupsNotFound"
	ReasonAMINotFound             = "AMINotFound"
	ReasonUnsupportedAlias        = "UnsupportedAlias"
	ReasonRoleNotFound            = "RoleNotFound"
	ReasonInstanceProfileNotFound = "InstanceProfileNotFound"
	ReasonDependenciesNotReady    = "DependenciesNotReady"
	ReasonUnhealthyDependents     = "UnhealthyDependents"
	ReasonReconcilingDependents   = "ReconcilingDependents"
)

// set writes a condition; a True one gets its type as reason, as Karpenter's conditions do.
func (c *Controller) set(nodeClass *awsv1.EC2NodeClass, condType string, status metav1.ConditionStatus, reason, message string) {
	if status == metav1.ConditionTrue {
		reason = condType
	}
	meta.SetStatusCondition(&nodeClass.Status.Conditions, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            message,
		ObservedGeneration: nodeClass.Generation,
		LastTransitionTime: metav1.NewTime(c.Clock.Now()),
	})
}

func (c *Controller) setTrue(nodeClass *awsv1.EC2NodeClass, condType string) {
	c.set(nodeClass, condType, metav1.ConditionTrue, "", "")
}

// dependents are the conditions ValidationSucceeded waits on and Ready summarises.
func (c *Controller) dependents() []string {
	out := []string{awsv1.ConditionTypeAMIsReady, awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeInstanceProfileReady}
	if c.ReservedCapacity {
		out = append(out, awsv1.ConditionTypeCapacityReservationsReady)
	}
	return out
}

// setReady sets Ready from the dependents and ValidationSucceeded: False (with each False condition and
// its message) if any is False, Unknown if any is missing or Unknown, True otherwise.
func (c *Controller) setReady(nodeClass *awsv1.EC2NodeClass) {
	var unhealthy, pending []string
	for _, t := range append(c.dependents(), awsv1.ConditionTypeValidationSucceeded) {
		cond := meta.FindStatusCondition(nodeClass.Status.Conditions, t)
		switch {
		case cond == nil || cond.Status == metav1.ConditionUnknown:
			pending = append(pending, t+"=Unknown")
		case cond.Status == metav1.ConditionFalse && t == awsv1.ConditionTypeValidationSucceeded && cond.Reason == ReasonDependenciesNotReady:
			// Validation only waits on the False conditions listed already.
		case cond.Status == metav1.ConditionFalse:
			entry := t + "=False"
			if cond.Message != "" {
				entry += " (" + cond.Message + ")"
			}
			unhealthy = append(unhealthy, entry)
		}
	}
	switch {
	case len(unhealthy) > 0:
		c.set(nodeClass, awsv1.ConditionTypeReady, metav1.ConditionFalse, ReasonUnhealthyDependents, strings.Join(unhealthy, ", "))
	case len(pending) > 0:
		c.set(nodeClass, awsv1.ConditionTypeReady, metav1.ConditionUnknown, ReasonReconcilingDependents, strings.Join(pending, ", "))
	default:
		c.setTrue(nodeClass, awsv1.ConditionTypeReady)
	}
}

// validate sets ValidationSucceeded: it waits (False when a dependent is False, Unknown while one is
// unknown) until every dependent is True, then runs the validators; it looks again every 10 minutes.
func (c *Controller) validate(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (time.Duration, error) {
	const message = "Awaiting AMI, Instance Profile, Security Group, and Subnet resolution"
	status := metav1.ConditionTrue
	for _, t := range c.dependents() {
		cond := meta.FindStatusCondition(nodeClass.Status.Conditions, t)
		switch {
		case cond != nil && cond.Status == metav1.ConditionFalse:
			status = metav1.ConditionFalse
		case (cond == nil || cond.Status == metav1.ConditionUnknown) && status == metav1.ConditionTrue:
			status = metav1.ConditionUnknown
		}
	}
	if status != metav1.ConditionTrue {
		c.set(nodeClass, awsv1.ConditionTypeValidationSucceeded, status, ReasonDependenciesNotReady, message)
		return validationRequeue, nil
	}
	for _, check := range c.Validators {
		reason, failure, err := check(ctx, nodeClass)
		if err != nil {
			return 0, fmt.Errorf("validating ec2nodeclass, %w", err)
		}
		if reason != "" {
			c.set(nodeClass, awsv1.ConditionTypeValidationSucceeded, metav1.ConditionFalse, reason, failure)
			return validationRequeue, nil
		}
	}
	c.setTrue(nodeClass, awsv1.ConditionTypeValidationSucceeded)
	return validationRequeue, nil
}
