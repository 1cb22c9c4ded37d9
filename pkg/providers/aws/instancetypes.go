package aws

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/catalog"
	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/unavailable"
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
	unavailable *unavailable.Offerings
	clock       clock.Clock

	mu    sync.Mutex
	cache map[nodeClassKey]cloudprovider.InstanceTypes
	// listed is the last answer per node class, valid while the unavailable cache's version holds.
	listed map[nodeClassKey]listing
}

type nodeClassKey struct {
	uid        string
	generation int64
}

type listing struct {
	its   cloudprovider.InstanceTypes
	seq   uint64
	until time.Time
}

// List returns the catalog shaped by the node class with unavailable offerings marked. The answer is shared
// between calls until the unavailable cache changes: callers must not modify it.
func (c *catalogTypes) List(_ context.Context, nodeClass *awsv1.EC2NodeClass) (cloudprovider.InstanceTypes, error) {
	key := nodeClassKey{uid: string(nodeClass.UID), generation: nodeClass.Generation}
	seq, until := c.unavailable.Version()
	now := c.clock.Now()
	c.mu.Lock()
	if l, ok := c.listed[key]; ok && l.seq == seq && (l.until.IsZero() || now.Before(l.until)) {
		c.mu.Unlock()
		return l.its, nil
	}
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
	c.mu.Lock()
	if len(c.listed) >= 64 {
		clear(c.listed)
	}
	c.listed[key] = listing{its: out, seq: seq, until: until}
	c.mu.Unlock()
	return out, nil
}
