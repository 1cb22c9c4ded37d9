package instance

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// launchRequest is one NodeClaim's attempt, queued in a batch.
type launchRequest struct {
	req       Request
	overrides []Override
	done      chan launchResult
}

// launchResult is the instance launched for a request, or the fleet's errors when none was.
type launchResult struct {
	instance *Instance
	errors   []ec2types.CreateFleetError
	err      error
	// untagged is true for an instance of a batch: it lacks its NodeClaim tag until the requester adds it.
	untagged bool
}

// batchKey is equal for launches one CreateFleet can serve together: same capacity type, overrides and
// tags (everything but the NodeClaim).
func batchKey(req Request, overrides []Override) string {
	b, _ := json.Marshal(struct {
		CapacityType string
		Reservation  ReservationKind
		Overrides    []Override
		Tags         map[string]string
	}{req.CapacityType, req.Reservation, overrides, req.Tags}) // plain values always marshal
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// clientToken makes CreateFleet idempotent: the same NodeClaims (by UID) launching from the same overrides
// get the same token, so a retried request returns the first one's instances.
func clientToken(reqs []*launchRequest) string {
	var uids []string
	for _, r := range reqs {
		uids = append(uids, r.req.NodeClaimUID)
	}
	slices.Sort(uids)
	b, _ := json.Marshal(struct {
		UIDs      []string
		Overrides []Override
	}{uids, reqs[0].overrides})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:64]
}

// execFleet launches a batch with one CreateFleet and hands each request its instance. A single request
// carries its NodeClaim tag in the fleet's tags; in a batch of several, each requester tags its instance
// right after (in parallel).
func (p *Provider) execFleet(ctx context.Context, reqs []*launchRequest) {
	first := reqs[0]
	tags := first.req.Tags
	if len(reqs) == 1 {
		tags = withNodeClaim(tags, first.req.NodeClaimName)
	}
	in := fleetInput(first.req.CapacityType, first.overrides, len(reqs), tags, clientToken(reqs))
	if first.req.CapacityType == capacityTypeReserved {
		reservedFleet(in, first.req.Reservation)
	}
	out, err := p.ec2.CreateFleet(ctx, in)
	if err != nil {
		for _, r := range reqs {
			r.done <- launchResult{err: err}
		}
		return
	}
	p.countLaunchFailures(first.req.CapacityType, first.overrides, out.Errors)
	instances := launched(out, first.req.CapacityType, tags)
	withReservations(instances, first.overrides)
	for i, r := range reqs {
		if i >= len(instances) {
			r.done <- launchResult{errors: out.Errors}
			continue
		}
		r.done <- launchResult{instance: instances[i], errors: out.Errors, untagged: len(reqs) > 1}
	}
}

// tagNodeClaim tags a batched instance with its NodeClaim. A failure is logged, not returned: the instance
// runs and belongs to the claim; returning an error would launch a second one.
func (p *Provider) tagNodeClaim(ctx context.Context, in *Instance, name string) {
	in.Tags = withNodeClaim(in.Tags, name)
	_, err := p.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{in.ID},
		Tags: []ec2types.Tag{{Key: aws.String(NodeClaimTagKey), Value: aws.String(name)}}})
	if err != nil {
		log.FromContext(ctx).Error(err, "tagging a launched instance with its nodeclaim", "instanceID", in.ID, "NodeClaim", name)
	}
}

// launched lists the fleet's instances, one per instance ID.
func launched(out *ec2.CreateFleetOutput, capacityType string, tags map[string]string) []*Instance {
	var res []*Instance
	for _, fi := range out.Instances {
		var o ec2types.FleetLaunchTemplateOverrides
		if fi.LaunchTemplateAndOverrides != nil && fi.LaunchTemplateAndOverrides.Overrides != nil {
			o = *fi.LaunchTemplateAndOverrides.Overrides
		}
		for _, id := range fi.InstanceIds {
			res = append(res, &Instance{ID: id, InstanceType: string(fi.InstanceType), Zone: aws.ToString(o.AvailabilityZone),
				SubnetID: aws.ToString(o.SubnetId), ImageID: aws.ToString(o.ImageId), CapacityType: capacityType,
				State: string(ec2types.InstanceStateNamePending), Tags: maps.Clone(tags)})
		}
	}
	return res
}

// fleetInput is an instant fleet of n instances over the overrides, one launch template config per
// template, tagging the fleet, its instances and their volumes (an instant fleet can't tag network
// interfaces: the launch template does).
func fleetInput(capacityType string, overrides []Override, n int, tags map[string]string, token string) *ec2.CreateFleetInput {
	byTemplate := map[string][]ec2types.FleetLaunchTemplateOverridesRequest{}
	var templates []string
	for i, o := range overrides {
		if _, ok := byTemplate[o.LaunchTemplate]; !ok {
			templates = append(templates, o.LaunchTemplate)
		}
		req := ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(o.InstanceType),
			SubnetId: aws.String(o.SubnetID), AvailabilityZone: aws.String(o.Zone)}
		if o.ImageID != "" {
			req.ImageId = aws.String(o.ImageID)
		}
		if capacityType != capacityTypeSpot {
			req.Priority = aws.Float64(float64(i)) // lowest-price ignores it; kept for a prioritized strategy
		}
		byTemplate[o.LaunchTemplate] = append(byTemplate[o.LaunchTemplate], req)
	}
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	for _, t := range templates {
		configs = append(configs, ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(t), Version: aws.String("$Latest")},
			Overrides:                   byTemplate[t],
		})
	}
	var ec2Tags []ec2types.Tag
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		ec2Tags = append(ec2Tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		ClientToken:           aws.String(token),
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(int32(n)), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType),
		},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: ec2Tags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: ec2Tags},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: ec2Tags},
		},
	}
	if capacityType == capacityTypeSpot {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
	}
	return in
}

// countLaunchFailures counts each offering the fleet reported an error for. EC2 names the zone of a
// failed offering but not its ID, which the overrides carry.
func (p *Provider) countLaunchFailures(capacityType string, overrides []Override, errs []ec2types.CreateFleetError) {
	zoneIDs := map[string]string{}
	for _, o := range overrides {
		if o.ZoneID != "" {
			zoneIDs[o.Zone] = o.ZoneID
		}
	}
	for _, e := range errs {
		var zone string
		if e.LaunchTemplateAndOverrides != nil && e.LaunchTemplateAndOverrides.Overrides != nil {
			zone = aws.ToString(e.LaunchTemplateAndOverrides.Overrides.AvailabilityZone)
		}
		reason := launchFailureReason(aws.ToString(e.ErrorCode), aws.ToString(e.ErrorMessage))
		p.metrics.launchFailures.WithLabelValues(zone, zoneIDs[zone], capacityType, reason).Inc()
	}
}
