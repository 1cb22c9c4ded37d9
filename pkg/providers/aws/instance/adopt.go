package instance

import (
	"context"
	"fmt"
	"slices"
	"sync"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider"
)

// A batched CreateFleet launches the instances of several NodeClaims at once, with the tags they share;
// each requester then tags its instance with its NodeClaim's name. A crash between the two leaves
// instances without a NodeClaim tag, and their claims launch again after the restart. So that exactly
// one instance runs per claim, the first launch after a start lists the cluster's instances that carry
// no NodeClaim tag (orphans), and a claim adopts an orphan its own request could have launched (same
// capacity type and tags, the type and zone of one of its overrides) instead of launching another.
// Orphans nobody adopts are left to garbage collection.

// orphans are the untagged instances found at start that no claim has adopted yet.
type orphans struct {
	mu     sync.Mutex
	loaded bool
	idle   []*Instance
}

// adopt returns an orphan the request matches, tagged with the request's NodeClaim, or nil. Loading the
// orphans is retried by the next launch when it fails; the error is returned so that this launch fails
// rather than launching a second instance.
func (p *Provider) adopt(ctx context.Context, req Request) (*Instance, error) {
	o := &p.orphans
	o.mu.Lock()
	if !o.loaded {
		all, err := p.List(ctx)
		if err != nil {
			o.mu.Unlock()
			return nil, fmt.Errorf("listing instances left untagged by a batched launch, %w", err)
		}
		o.idle = slices.DeleteFunc(all, func(in *Instance) bool { return in.Tags[NodeClaimTagKey] != "" })
		o.loaded = true
	}
	i := slices.IndexFunc(o.idle, req.couldHaveLaunched)
	if i < 0 {
		o.mu.Unlock()
		return nil, nil
	}
	in := o.idle[i]
	o.idle = slices.Delete(o.idle, i, i+1)
	o.mu.Unlock()
	if ok, err := p.adoptable(ctx, in); err != nil || !ok {
		if err != nil {
			return nil, err
		}
		return p.adopt(ctx, req)
	}
	p.tagNodeClaim(ctx, in, req.NodeClaimName)
	return in, nil
}

// adoptable reports whether the orphan still runs and no NodeClaim recorded it (a claim whose status holds
// the instance lost only its tag, and keeps it).
func (p *Provider) adoptable(ctx context.Context, in *Instance) (bool, error) {
	current, err := p.Get(ctx, in.ID)
	if cloudprovider.IsNodeClaimNotFoundError(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if current.State != string(ec2types.InstanceStateNamePending) && current.State != string(ec2types.InstanceStateNameRunning) {
		return false, nil
	}
	if p.isClaimed == nil {
		return true, nil
	}
	claimed, err := p.isClaimed(ctx, in.ProviderID())
	return !claimed, err
}

// couldHaveLaunched reports whether a launch of the request may have started the instance.
func (req Request) couldHaveLaunched(in *Instance) bool {
	if in.CapacityType != req.CapacityType {
		return false
	}
	for k, v := range req.Tags {
		if in.Tags[k] != v {
			return false
		}
	}
	return slices.ContainsFunc(req.Overrides, func(o Override) bool { return o.InstanceType == in.InstanceType && o.Zone == in.Zone })
}
