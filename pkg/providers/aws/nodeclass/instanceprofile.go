package nodeclass

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/instanceprofile"
)

// resolveInstanceProfile sets status.instanceProfile: spec.instanceProfile when given (it must exist), or
// the profile Lathe manages for spec.role, created (with a new name) when there is none holding the role.
func (c *Controller) resolveInstanceProfile(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (time.Duration, error) {
	profiles := c.Providers.InstanceProfiles
	if nodeClass.Spec.Role == "" {
		name := aws.ToString(nodeClass.Spec.InstanceProfile)
		nodeClass.Status.InstanceProfile = name
		if _, err := profiles.Get(ctx, name); err != nil {
			if !instanceprofile.IsNotFound(err) {
				return 0, err
			}
			c.set(nodeClass, awsv1.ConditionTypeInstanceProfileReady, metav1.ConditionFalse, ReasonInstanceProfileNotFound,
				fmt.Sprintf("instance profile %s (spec.instanceProfile) does not exist", name))
			return notFoundRequeue, nil
		}
		c.setTrue(nodeClass, awsv1.ConditionTypeInstanceProfileReady)
		return 0, nil
	}
	recreationKey := nodeClass.Spec.Role + "/" + string(nodeClass.UID)
	if name, ok := c.recreation.Get(recreationKey); ok {
		nodeClass.Status.InstanceProfile = name
	}
	if current := nodeClass.Status.InstanceProfile; current != "" {
		profile, err := profiles.Get(ctx, current)
		if err != nil && !instanceprofile.IsNotFound(err) {
			return 0, err
		}
		if err == nil && len(profile.Roles) > 0 && aws.ToString(profile.Roles[0].RoleName) == nodeClass.Spec.Role {
			c.setTrue(nodeClass, awsv1.ConditionTypeInstanceProfileReady)
			return 0, nil
		}
	}
	name := profiles.NewName(nodeClass)
	if err := profiles.Create(ctx, name, nodeClass.Spec.Role, profiles.Path(nodeClass), profiles.Tags(nodeClass)); err != nil {
		// The profile may exist without the role; remove it so that failures don't pile up profiles.
		_ = profiles.Delete(ctx, name)
		if instanceprofile.IsRoleNotFound(err) {
			c.set(nodeClass, awsv1.ConditionTypeInstanceProfileReady, metav1.ConditionFalse, ReasonRoleNotFound,
				fmt.Sprintf("IAM role %s (spec.role) does not exist", nodeClass.Spec.Role))
			return notFoundRequeue, nil
		}
		return 0, fmt.Errorf("creating instance profile, %w", err)
	}
	c.recreation.Set(recreationKey, name)
	nodeClass.Status.InstanceProfile = name
	c.setTrue(nodeClass, awsv1.ConditionTypeInstanceProfileReady)
	return 0, nil
}
