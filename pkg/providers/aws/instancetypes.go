package aws

import (
	"context"
	"slices"
	"sync"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// InstanceTypeSource lists the instance types nodes of a node class can be, with their offerings (those
// in the unavailable-offerings cache marked unavailable).
type InstanceTypeSource interface {
	List(ctx context.Context, nodeClass *awsv1.EC2NodeClass) (cloudprovider.InstanceTypes, error)
}

// catalogTypes is the embedded EC2 catalog shaped by the node class (catalog.ForNodeClass), the source
// used until the DescribeInstanceTypes-based provider is wired in.
type catalogTypes struct {
	base        cloudprovider.InstanceTypes
	vmOverhead  float64
	unavailable interface {
		IsUnavailable(instanceType, zone, capacityType string) bool
	}

	mu    sync.Mutex
	cache map[nodeClassKey]cloudprovider.InstanceTypes
}

type nodeClassKey struct {
	uid        string
	generation int64
}

func (c *catalogTypes) List(_ context.Context, nodeClass *awsv1.EC2NodeClass) (cloudprovider.InstanceTypes, error) {
	key := nodeClassKey{uid: string(nodeClass.UID), generation: nodeClass.Generation}
	c.mu.Lock()
	shaped, ok := c.cache[key]
	if !ok {
		shaped = catalog.ForNodeClassWithVMOverhead(c.base, nodeClass, c.vmOverhead)
		if len(c.cache) >= 64 {
			clear(c.cache)
		}
		c.cache[key] = shaped
	}
	c.mu.Unlock()
	out := make(cloudprovider.InstanceTypes, 0, len(shaped))
	for _, it := range shaped {
		cp := *it
		cp.Offerings = slices.Clone(it.Offerings)
		for i := range cp.Offerings {
			o := &cp.Offerings[i]
			if c.unavailable.IsUnavailable(it.Name, o.Zone, o.CapacityType) {
				o.Available = false
			}
		}
		out = append(out, &cp)
	}
	return out, nil
}
