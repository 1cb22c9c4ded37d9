// Package launchtemplate keeps the EC2 launch templates Lathe launches instances from. A template is named
// by a hash of everything that goes into it (image, security groups, user data, block devices, metadata
// options, instance profile, public IP, monitoring, tags), so equal inputs share one template: it is
// created on first use, found again by name afterwards (also by a restarted Lathe), and deleted by
// DeleteUnused once nothing has launched from it for UnusedAfter. Hydrate registers the templates already
// in EC2 for the cluster, Lathe's and those Karpenter left (both carry eks:eks-cluster-name), so that the
// unused ones are deleted too; DeleteForNodeClass deletes a deleted node class's templates.
package launchtemplate

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// EC2API is the part of the EC2 client the provider calls.
type EC2API interface {
	CreateLaunchTemplate(context.Context, *ec2.CreateLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	DescribeLaunchTemplates(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	DeleteLaunchTemplate(context.Context, *ec2.DeleteLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
}

// Tag keys on the templates Lathe creates (Karpenter's).
const (
	ClusterTagKey    = "karpenter.k8s.aws/cluster"
	EKSClusterTagKey = "eks:eks-cluster-name"
	NodeClassTagKey  = "karpenter.k8s.aws/ec2nodeclass"
	// namePrefix starts every template name, followed by the hash.
	namePrefix = "karpenter.k8s.aws/"
)

// Defaults of the metadata options (the EC2NodeClass defaults): IMDSv2 only, one hop.
const (
	DefaultHTTPEndpoint     = "enabled"
	DefaultHTTPProtocolIPv6 = "disabled"
	DefaultHTTPTokens       = "required"
	DefaultHopLimit         = 1
)

// UnusedAfter is how long a template may go without a launch before DeleteUnused removes it (the TTL of
// Karpenter's launch template cache, whose eviction deletes the template).
const UnusedAfter = time.Minute

// Input is everything a template holds.
type Input struct {
	NodeClassName    string
	ImageID          string
	UserData         string // the document, not yet base64
	SecurityGroupIDs []string
	InstanceProfile  string
	BlockDevices     []*awsv1.BlockDeviceMapping
	Metadata         *awsv1.MetadataOptions
	// AssociatePublicIP is the node class's associatePublicIPAddress (nil: the subnet decides).
	AssociatePublicIP  *bool
	DetailedMonitoring bool
	// Tags are the instance's tags (the node class's with Karpenter's static ones: the cluster's ownership,
	// EKS cluster name, node pool and node class tags). They go on the template itself, with Lathe's cluster
	// and node class tags, and on what the template launches that the fleet can't tag: the network
	// interface and, with TagSpotRequests, the spot instance request. Karpenter's controller policy lets
	// only templates and resources so tagged be created and used, so a template serves one node pool.
	Tags map[string]string
	// CapacityReservation is the reservation a reserved launch targets (nil for on-demand and spot).
	CapacityReservation *Reservation `json:",omitempty"`
	// OptOutOfOpenReservations keeps on-demand and spot launches out of open capacity reservations (the
	// ReservedCapacity gate is on).
	OptOutOfOpenReservations bool `json:",omitempty"`
	// TagSpotRequests tags the spot instance request too (for a spot launch).
	TagSpotRequests bool
}

// Provider creates, finds and deletes launch templates. Safe for concurrent use.
type Provider struct {
	ec2         EC2API
	clusterName string
	clock       clock.Clock

	// userDataBytes is karpenter_ec2nodeclasses_userdata_bytes; nil records nothing.
	userDataBytes *prometheus.GaugeVec

	mu      sync.Mutex
	entries map[string]*entry // by template name
	// deleting holds the templates DeleteUnused is deleting, closed once deleted: Ensure waits for it rather
	// than hand out a template about to disappear.
	deleting map[string]chan struct{}
}

// New returns a provider for the cluster's templates. reg takes its metric (nil: none is recorded).
func New(api EC2API, clusterName string, clk clock.Clock, reg prometheus.Registerer) *Provider {
	if clk == nil {
		clk = clock.RealClock{}
	}
	p := &Provider{ec2: api, clusterName: clusterName, clock: clk, entries: map[string]*entry{}, deleting: map[string]chan struct{}{}}
	if reg != nil {
		p.userDataBytes = NewUserDataBytes(reg)
	}
	return p
}

// Name is the template name for the input: a hash of everything in it.
func (p *Provider) Name(in Input) string {
	normal := in
	normal.SecurityGroupIDs = slices.Sorted(slices.Values(in.SecurityGroupIDs))
	normal.Metadata = metadataWithDefaults(in.Metadata)
	b, _ := json.Marshal(struct {
		Cluster string
		Input   Input
	}{p.clusterName, normal}) // a struct of plain values always marshals
	h := fnv.New64a()
	_, _ = h.Write(b)
	return namePrefix + strconv.FormatUint(h.Sum64(), 10)
}

// Ensure returns the name of the template for the input, creating it when it doesn't exist yet.
// Concurrent calls for the same template wait for the first one's answer.
func (p *Provider) Ensure(ctx context.Context, in Input) (string, error) {
	name := p.Name(in)
	now := p.clock.Now()
	p.mu.Lock()
	for p.deleting[name] != nil {
		gone := p.deleting[name]
		p.mu.Unlock()
		select {
		case <-gone:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		p.mu.Lock()
	}
	e, known := p.entries[name]
	if !known {
		e = &entry{ready: make(chan struct{})}
		p.entries[name] = e
	}
	e.lastUsed = now
	p.mu.Unlock()
	if known {
		select {
		case <-e.ready:
			return name, e.err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	e.err = p.findOrCreate(ctx, name, in)
	if e.err != nil {
		p.forget(name)
	}
	close(e.ready)
	return name, e.err
}

// entry is one template this process uses.
type entry struct {
	// ready is closed once the template is known to exist, or err says why it doesn't.
	ready    chan struct{}
	err      error
	lastUsed time.Time
}

func (p *Provider) findOrCreate(ctx context.Context, name string, in Input) error {
	exists, err := p.exists(ctx, name)
	if err != nil || exists {
		return err
	}
	if err := p.create(ctx, name, in); err != nil {
		return err
	}
	log.FromContext(ctx).Info("created launch template", "launchTemplate", name, "imageID", in.ImageID)
	return nil
}

// Forget drops what the provider remembers of a template, so that the next Ensure checks EC2 again (for
// a template deleted behind its back).
func (p *Provider) Forget(name string) { p.forget(name) }

func (p *Provider) forget(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.entries, name)
}

func (p *Provider) exists(ctx context.Context, name string) (bool, error) {
	_, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
	if hasCode(err, "InvalidLaunchTemplateName.NotFoundException") {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("describing launch template %s, %w", name, err)
	}
	return true, nil
}

func (p *Provider) create(ctx context.Context, name string, in Input) error {
	tags := map[string]string{}
	maps.Copy(tags, in.Tags)
	tags[ClusterTagKey] = p.clusterName
	tags[EKSClusterTagKey] = p.clusterName
	tags[NodeClassTagKey] = in.NodeClassName
	p.measureUserData(ctx, in)
	_, err := p.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: withLaunchTags(templateData(in), in),
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: ec2Tags(tags)}},
	})
	if hasCode(err, "InvalidLaunchTemplateName.AlreadyExistsException") {
		return nil // created meanwhile by another launch with the same inputs
	}
	if err != nil {
		return fmt.Errorf("creating launch template %s, %w", name, err)
	}
	return nil
}

// measureUserData records the size of the user data about to go into a template, before EC2 sees it, so a
// document EC2 will refuse is measured too; near the limit a log line says so.
func (p *Provider) measureUserData(ctx context.Context, in Input) {
	size := len(in.UserData)
	if p.userDataBytes != nil {
		p.userDataBytes.WithLabelValues(in.NodeClassName).Set(float64(size))
	}
	if size >= userDataWarnAt {
		log.FromContext(ctx).Info("user data is close to EC2's limit", "EC2NodeClass", in.NodeClassName, "bytes", size, "limit", userDataLimit)
	}
}

func templateData(in Input) *ec2types.RequestLaunchTemplateData {
	md := metadataWithDefaults(in.Metadata)
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:          aws.String(in.ImageID),
		UserData:         aws.String(base64.StdEncoding.EncodeToString([]byte(in.UserData))),
		SecurityGroupIds: in.SecurityGroupIDs,
		MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
			HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(*md.HTTPEndpoint),
			HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(*md.HTTPProtocolIPv6),
			HttpPutResponseHopLimit: aws.Int32(int32(*md.HTTPPutResponseHopLimit)),
			HttpTokens:              ec2types.LaunchTemplateHttpTokensState(*md.HTTPTokens),
		},
		Monitoring:          &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(in.DetailedMonitoring)},
		BlockDeviceMappings: blockDevices(in.BlockDevices),
	}
	if in.InstanceProfile != "" {
		data.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(in.InstanceProfile)}
	}
	if in.AssociatePublicIP != nil {
		// A network interface replaces the instance's security groups: they move onto it.
		data.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			AssociatePublicIpAddress: in.AssociatePublicIP, DeviceIndex: aws.Int32(0), Groups: in.SecurityGroupIDs,
		}}
		data.SecurityGroupIds = nil
	}
	withReservation(data, in)
	return data
}

func metadataWithDefaults(md *awsv1.MetadataOptions) *awsv1.MetadataOptions {
	out := &awsv1.MetadataOptions{}
	if md != nil {
		out = md.DeepCopy()
	}
	if out.HTTPEndpoint == nil {
		out.HTTPEndpoint = aws.String(DefaultHTTPEndpoint)
	}
	if out.HTTPProtocolIPv6 == nil {
		out.HTTPProtocolIPv6 = aws.String(DefaultHTTPProtocolIPv6)
	}
	if out.HTTPTokens == nil {
		out.HTTPTokens = aws.String(DefaultHTTPTokens)
	}
	if out.HTTPPutResponseHopLimit == nil {
		out.HTTPPutResponseHopLimit = aws.Int64(DefaultHopLimit)
	}
	return out
}

// blockDevices turns the node class's mappings into the template's; without any, the root volume is the
// AL2023 default Karpenter uses: /dev/xvda, 20 GiB gp3, encrypted.
func blockDevices(mappings []*awsv1.BlockDeviceMapping) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	if len(mappings) == 0 {
		return []ec2types.LaunchTemplateBlockDeviceMappingRequest{{DeviceName: aws.String("/dev/xvda"), Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{
			VolumeSize: aws.Int32(20), VolumeType: ec2types.VolumeTypeGp3, Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true)}}}
	}
	var out []ec2types.LaunchTemplateBlockDeviceMappingRequest
	for _, m := range mappings {
		if m == nil || m.EBS == nil {
			continue
		}
		ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{
			DeleteOnTermination: m.EBS.DeleteOnTermination, Encrypted: m.EBS.Encrypted, KmsKeyId: m.EBS.KMSKeyID, SnapshotId: m.EBS.SnapshotID,
		}
		if m.EBS.VolumeType != nil {
			ebs.VolumeType = ec2types.VolumeType(*m.EBS.VolumeType)
		}
		if m.EBS.VolumeSize != nil {
			ebs.VolumeSize = aws.Int32(int32(m.EBS.VolumeSize.ScaledValue(30))) // GiB
		}
		if m.EBS.IOPS != nil {
			ebs.Iops = aws.Int32(int32(*m.EBS.IOPS))
		}
		if m.EBS.Throughput != nil {
			ebs.Throughput = aws.Int32(int32(*m.EBS.Throughput))
		}
		out = append(out, ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: m.DeviceName, Ebs: ebs})
	}
	return out
}

// Hydrate registers the cluster's templates in EC2 as used now, as Karpenter hydrates its template cache when
// it is elected leader: templates left behind by an earlier Lathe or by Karpenter are then deleted by
// DeleteUnused once nothing has launched from them for UnusedAfter.
func (p *Provider) Hydrate(ctx context.Context) error {
	names, err := p.list(ctx)
	if err != nil {
		return err
	}
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, name := range names {
		if _, ok := p.entries[name]; !ok {
			p.entries[name] = knownEntry(now)
		}
	}
	log.FromContext(ctx).V(1).Info("found the cluster's launch templates", "count", len(names))
	return nil
}

// knownEntry is a template found in EC2 rather than ensured by this process, counted as used at now.
func knownEntry(now time.Time) *entry {
	e := &entry{ready: make(chan struct{}), lastUsed: now}
	close(e.ready)
	return e
}

// DeleteUnused deletes the cluster's templates nothing launched from within UnusedAfter (templates this
// process neither ensured nor hydrated count from the first sweep that finds them).
func (p *Provider) DeleteUnused(ctx context.Context) error {
	names, err := p.list(ctx)
	if err != nil {
		return err
	}
	now := p.clock.Now()
	var errs []error
	for _, name := range names {
		p.mu.Lock()
		e, ok := p.entries[name]
		if !ok {
			p.entries[name] = knownEntry(now)
		}
		stale := ok && now.Sub(e.lastUsed) >= UnusedAfter
		gone := make(chan struct{})
		if stale {
			delete(p.entries, name)
			p.deleting[name] = gone
		}
		p.mu.Unlock()
		if !stale {
			continue
		}
		err := p.delete(ctx, name)
		p.mu.Lock()
		delete(p.deleting, name)
		close(gone)
		p.mu.Unlock()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		log.FromContext(ctx).Info("deleted unused launch template", "launchTemplate", name)
	}
	return errors.Join(errs...)
}

// DeleteForNodeClass deletes every template of the cluster made for the node class (its finalizer calls
// this once the node class is being deleted and none of its NodeClaims are left), as Karpenter does.
func (p *Provider) DeleteForNodeClass(ctx context.Context, nodeClass *awsv1.EC2NodeClass) error {
	names, err := p.list(ctx, ec2types.Filter{Name: aws.String("tag:" + NodeClassTagKey), Values: []string{nodeClass.Name}})
	if err != nil {
		return fmt.Errorf("listing launch templates of ec2nodeclass %q, %w", nodeClass.Name, err)
	}
	var errs []error
	for _, name := range names {
		p.forget(name)
		if err := p.delete(ctx, name); err != nil {
			errs = append(errs, err)
		}
	}
	if p.userDataBytes != nil {
		p.userDataBytes.DeleteLabelValues(nodeClass.Name)
	}
	if len(names) > 0 && len(errs) == 0 {
		log.FromContext(ctx).Info("deleted launch templates of ec2nodeclass", "EC2NodeClass", nodeClass.Name, "count", len(names))
	}
	return errors.Join(errs...)
}

// delete deletes the template; one already gone is not an error.
func (p *Provider) delete(ctx context.Context, name string) error {
	_, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(name)})
	if err != nil && !hasCode(err, "InvalidLaunchTemplateName.NotFoundException") {
		return fmt.Errorf("deleting launch template %s, %w", name, err)
	}
	return nil
}

// clusterTagKeys are the tags that say a template is the cluster's: eks:eks-cluster-name, which Karpenter
// v1.14 and Lathe put on their templates and Karpenter finds them by, and Lathe's own cluster tag, which
// templates of earlier Lathe releases carry alone.
var clusterTagKeys = []string{EKSClusterTagKey, ClusterTagKey}

// describePageSize is the most templates one DescribeLaunchTemplates call returns (EC2's cap).
const describePageSize = 200

// list returns the names of the cluster's templates (by any of clusterTagKeys) that also match filters,
// each once, in the order found.
func (p *Provider) list(ctx context.Context, filters ...ec2types.Filter) ([]string, error) {
	seen := map[string]bool{}
	var names []string
	for _, key := range clusterTagKeys {
		pages := ec2.NewDescribeLaunchTemplatesPaginator(p.ec2, &ec2.DescribeLaunchTemplatesInput{
			Filters:    append([]ec2types.Filter{{Name: aws.String("tag:" + key), Values: []string{p.clusterName}}}, filters...),
			MaxResults: aws.Int32(describePageSize),
		})
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("listing launch templates, %w", err)
			}
			for _, lt := range out.LaunchTemplates {
				if name := aws.ToString(lt.LaunchTemplateName); !seen[name] {
					seen[name] = true
					names = append(names, name)
				}
			}
		}
	}
	return names, nil
}

func ec2Tags(tags map[string]string) []ec2types.Tag {
	var out []ec2types.Tag
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return out
}

func hasCode(err error, code string) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == code
}
