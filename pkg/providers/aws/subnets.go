package aws

import (
	"context"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// SubnetLister lists the subnets selector terms match (package subnet's provider, which caches).
type SubnetLister interface {
	List(ctx context.Context, terms []awsv1.SubnetSelectorTerm) ([]ec2types.Subnet, error)
}

// zonalSubnets picks, per zone, the node class's subnet with the most free IP addresses (zone → subnet ID).
// Without a lister, or when it fails, the first subnet per zone of the status.
func (c *CloudProvider) zonalSubnets(ctx context.Context, nodeClass *awsv1.EC2NodeClass) map[string]string {
	out := map[string]string{}
	resolved := map[string]bool{}
	for _, s := range nodeClass.Status.Subnets {
		resolved[s.ID] = true
		if _, ok := out[s.Zone]; !ok {
			out[s.Zone] = s.ID
		}
	}
	if c.subnets == nil {
		return out
	}
	listed, err := c.subnets.List(ctx, nodeClass.Spec.SubnetSelectorTerms)
	if err != nil {
		log.FromContext(ctx).Error(err, "listing subnets for free addresses, launching into the first per zone")
		return out
	}
	free := map[string]int32{}
	for _, s := range listed {
		id, zone := sdkaws.ToString(s.SubnetId), sdkaws.ToString(s.AvailabilityZone)
		n := sdkaws.ToInt32(s.AvailableIpAddressCount)
		if !resolved[id] {
			continue
		}
		if best, ok := free[zone]; !ok || n > best {
			free[zone], out[zone] = n, id
		}
	}
	return out
}
