package nodeclass

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/ami"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/capacityreservation"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/filters"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/securitygroup"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/subnet"
)

// Requeue intervals, as Karpenter's node class controller uses them.
const (
	subnetRequeue              = time.Minute
	securityGroupRequeue       = 5 * time.Minute
	amiRequeue                 = 5 * time.Minute
	notFoundRequeue            = time.Minute
	capacityReservationRequeue = time.Minute
	validationRequeue          = 10 * time.Minute
)

func (c *Controller) resolveSubnets(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (time.Duration, error) {
	subnets, err := c.Providers.Subnets.List(ctx, nodeClass.Spec.SubnetSelectorTerms)
	if err != nil {
		return 0, fmt.Errorf("getting subnets, %w", err)
	}
	if len(subnets) == 0 {
		nodeClass.Status.Subnets = nil
		c.set(nodeClass, awsv1.ConditionTypeSubnetsReady, metav1.ConditionFalse, ReasonSubnetsNotFound,
			"SubnetSelector did not match any Subnets: no subnet matches "+subnet.Describe(nodeClass.Spec.SubnetSelectorTerms))
		return notFoundRequeue, nil
	}
	nodeClass.Status.Subnets = make([]awsv1.Subnet, 0, len(subnets))
	for _, s := range subnets {
		nodeClass.Status.Subnets = append(nodeClass.Status.Subnets, awsv1.Subnet{
			ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), ZoneID: aws.ToString(s.AvailabilityZoneId),
		})
	}
	c.setTrue(nodeClass, awsv1.ConditionTypeSubnetsReady)
	return subnetRequeue, nil
}

func (c *Controller) resolveSecurityGroups(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (time.Duration, error) {
	groups, err := c.Providers.SecurityGroups.List(ctx, nodeClass.Spec.SecurityGroupSelectorTerms)
	if err != nil {
		return 0, fmt.Errorf("getting security groups, %w", err)
	}
	if len(groups) == 0 {
		nodeClass.Status.SecurityGroups = nil
		c.set(nodeClass, awsv1.ConditionTypeSecurityGroupsReady, metav1.ConditionFalse, ReasonSecurityGroupsNotFound,
			"SecurityGroupSelector did not match any SecurityGroups: no security group matches "+securitygroup.Describe(nodeClass.Spec.SecurityGroupSelectorTerms))
		return notFoundRequeue, nil
	}
	nodeClass.Status.SecurityGroups = make([]awsv1.SecurityGroup, 0, len(groups))
	for _, g := range groups {
		nodeClass.Status.SecurityGroups = append(nodeClass.Status.SecurityGroups, awsv1.SecurityGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName)})
	}
	c.setTrue(nodeClass, awsv1.ConditionTypeSecurityGroupsReady)
	return securityGroupRequeue, nil
}

func (c *Controller) resolveAMIs(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (time.Duration, error) {
	amis, err := c.Providers.AMIs.List(ctx, nodeClass)
	var unsupported *ami.UnsupportedAliasError
	var noAlias *ami.NoAliasImagesError
	switch {
	case errors.As(err, &unsupported):
		nodeClass.Status.AMIs = nil
		c.set(nodeClass, awsv1.ConditionTypeAMIsReady, metav1.ConditionFalse, ReasonUnsupportedAlias, unsupported.Error())
		return 0, nil
	case errors.As(err, &noAlias):
		nodeClass.Status.AMIs = nil
		c.set(nodeClass, awsv1.ConditionTypeAMIsReady, metav1.ConditionFalse, ReasonAMINotFound,
			fmt.Sprintf("AMISelector did not match any AMIs: no SSM parameter of alias %s exists for Kubernetes %s", noAlias.Alias, noAlias.Kubernetes))
		return notFoundRequeue, nil
	case err != nil:
		return 0, fmt.Errorf("getting amis, %w", err)
	case len(amis) == 0:
		nodeClass.Status.AMIs = nil
		c.set(nodeClass, awsv1.ConditionTypeAMIsReady, metav1.ConditionFalse, ReasonAMINotFound,
			"AMISelector did not match any AMIs: no available image matches "+describeAMITerms(nodeClass.Spec.AMISelectorTerms))
		return notFoundRequeue, nil
	}
	nodeClass.Status.AMIs = make([]awsv1.AMI, 0, len(amis))
	for _, a := range amis {
		nodeClass.Status.AMIs = append(nodeClass.Status.AMIs, awsv1.AMI{ID: a.ID, Name: a.Name, Deprecated: a.Deprecated, Requirements: a.Requirements})
	}
	c.setTrue(nodeClass, awsv1.ConditionTypeAMIsReady)
	return amiRequeue, nil
}

// describeAMITerms writes the terms as a status message names them.
func describeAMITerms(terms []awsv1.AMISelectorTerm) string {
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		var fields []string
		for _, f := range []struct{ name, value string }{{"alias", t.Alias}, {"id", t.ID}, {"name", t.Name}, {"owner", t.Owner}, {"ssmParameter", t.SSMParameter}} {
			if f.value != "" {
				fields = append(fields, f.name+" "+f.value)
			}
		}
		if len(t.Tags) > 0 {
			fields = append(fields, filters.DescribeTags(t.Tags))
		}
		parts = append(parts, strings.Join(fields, " and "))
	}
	return strings.Join(parts, " or ")
}

func (c *Controller) resolveCapacityReservations(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (time.Duration, error) {
	reservations, err := c.Providers.CapacityReservations.List(ctx, nodeClass.Spec.CapacityReservationSelectorTerms)
	if err != nil {
		return 0, fmt.Errorf("getting capacity reservations, %w", err)
	}
	now := c.Clock.Now()
	nodeClass.Status.CapacityReservations = nil
	requeue := capacityReservationRequeue
	for _, r := range reservations {
		entry, err := capacityreservation.Status(r, now)
		if err != nil {
			log.FromContext(ctx).Error(err, "skipping a capacity reservation")
			continue
		}
		nodeClass.Status.CapacityReservations = append(nodeClass.Status.CapacityReservations, entry)
		// Look again when a reservation ends, if that is sooner than the next poll.
		if r.EndDate != nil {
			if left := r.EndDate.Sub(now); left < requeue {
				requeue = max(left, time.Second)
			}
		}
	}
	c.setTrue(nodeClass, awsv1.ConditionTypeCapacityReservationsReady)
	return requeue, nil
}
