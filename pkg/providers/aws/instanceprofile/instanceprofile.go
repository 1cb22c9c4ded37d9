// Package instanceprofile manages the IAM instance profiles Lathe creates for an EC2NodeClass's role, as
// Karpenter does: a profile named <cluster>_<hash of region, node class and a random UUID>, under the path
// /karpenter/<region>/<cluster>/<node class UID>/, tagged as the cluster's and the node class's, holding
// the role. Profiles are cached for 15 minutes; a role IAM does not know is remembered for a minute so that
// a missing role does not create profile after profile.
package instanceprofile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	iamtypes "github.com/aws/aws-sdk-go-v2/service/iam/types"
	"github.com/aws/smithy-go"
	"github.com/mitchellh/hashstructure/v2"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/clock"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/ttlcache"
)

// Cache lifetimes, as upstream's.
const (
	ProfileTTL      = 15 * time.Minute
	RoleNotFoundTTL = time.Minute
)

// API is the part of the IAM client the provider calls.
type API interface {
	GetInstanceProfile(context.Context, *iam.GetInstanceProfileInput, ...func(*iam.Options)) (*iam.GetInstanceProfileOutput, error)
	CreateInstanceProfile(context.Context, *iam.CreateInstanceProfileInput, ...func(*iam.Options)) (*iam.CreateInstanceProfileOutput, error)
	TagInstanceProfile(context.Context, *iam.TagInstanceProfileInput, ...func(*iam.Options)) (*iam.TagInstanceProfileOutput, error)
	AddRoleToInstanceProfile(context.Context, *iam.AddRoleToInstanceProfileInput, ...func(*iam.Options)) (*iam.AddRoleToInstanceProfileOutput, error)
	RemoveRoleFromInstanceProfile(context.Context, *iam.RemoveRoleFromInstanceProfileInput, ...func(*iam.Options)) (*iam.RemoveRoleFromInstanceProfileOutput, error)
	DeleteInstanceProfile(context.Context, *iam.DeleteInstanceProfileInput, ...func(*iam.Options)) (*iam.DeleteInstanceProfileOutput, error)
	iam.ListInstanceProfilesAPIClient
}

// Provider creates, reads and deletes instance profiles.
type Provider struct {
	api          API
	region       string
	cluster      string
	profiles     *ttlcache.Cache[string, iamtypes.InstanceProfile]
	rolesMissing *ttlcache.Cache[string, error]
}

// NewProvider returns a provider for the cluster's profiles in the region.
func NewProvider(api API, clk clock.PassiveClock, region, cluster string) *Provider {
	return &Provider{
		api: api, region: region, cluster: cluster,
		profiles:     ttlcache.New[string, iamtypes.InstanceProfile](clk, ProfileTTL),
		rolesMissing: ttlcache.New[string, error](clk, RoleNotFoundTTL),
	}
}

// NewName returns a fresh profile name for the node class: <cluster>_<hash>, the hash over the region, the
// node class's name and a random UUID, so that a role change makes a new profile.
func (p *Provider) NewName(nodeClass *awsv1.EC2NodeClass) string {
	h, err := hashstructure.Hash(p.region+nodeClass.Name+string(uuid.NewUUID()), hashstructure.FormatV2, nil)
	if err != nil {
		panic(fmt.Sprintf("hashing a string: %v", err))
	}
	return fmt.Sprintf("%s_%d", p.cluster, h)
}

// Path is the IAM path of the node class's profiles: /karpenter/<region>/<cluster>/<uid>/.
func (p *Provider) Path(nodeClass *awsv1.EC2NodeClass) string {
	return "/" + strings.Join([]string{"karpenter", p.region, p.cluster, string(nodeClass.UID)}, "/") + "/"
}

// Tags are the tags of the node class's profiles: its own tags and the cluster's ownership tags.
func (p *Provider) Tags(nodeClass *awsv1.EC2NodeClass) map[string]string {
	tags := map[string]string{}
	for k, v := range nodeClass.Spec.Tags {
		tags[k] = v
	}
	tags["kubernetes.io/cluster/"+p.cluster] = "owned"
	tags["eks:eks-cluster-name"] = p.cluster
	tags[awsv1.LabelNodeClass] = nodeClass.Name
	tags["topology.kubernetes.io/region"] = p.region
	return tags
}

// Get returns a profile.
func (p *Provider) Get(ctx context.Context, name string) (iamtypes.InstanceProfile, error) {
	if cached, ok := p.profiles.Get(name); ok {
		return cached, nil
	}
	out, err := p.api.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		return iamtypes.InstanceProfile{}, fmt.Errorf("getting instance profile %s, %w", name, err)
	}
	p.profiles.Set(name, *out.InstanceProfile)
	return *out.InstanceProfile, nil
}

// Create makes sure the named profile exists with the path and tags and holds exactly the role.
func (p *Provider) Create(ctx context.Context, name, role, path string, tags map[string]string) error {
	if err, ok := p.rolesMissing.Get(role); ok {
		return fmt.Errorf("role not found, %w", err)
	}
	profile, err := p.Get(ctx, name)
	if err != nil {
		if !IsNotFound(err) {
			return err
		}
		out, err := p.api.CreateInstanceProfile(ctx, &iam.CreateInstanceProfileInput{InstanceProfileName: aws.String(name), Path: aws.String(path), Tags: iamTags(tags)})
		if err != nil {
			return fmt.Errorf("creating instance profile %s, %w", name, err)
		}
		profile = *out.InstanceProfile
	} else if missing := missingTags(profile.Tags, tags); len(missing) > 0 {
		// All the tags, not only the missing ones: Karpenter's controller policy lets TagInstanceProfile
		// through only when the request carries the cluster, EKS, region and node class tags.
		if _, err := p.api.TagInstanceProfile(ctx, &iam.TagInstanceProfileInput{InstanceProfileName: aws.String(name), Tags: iamTags(tags)}); err != nil {
			return fmt.Errorf("tagging instance profile %s, %w", name, err)
		}
		profile.Tags = append(profile.Tags, missing...)
	}
	if err := p.ensureRole(ctx, &profile, role); err != nil {
		return err
	}
	p.profiles.Set(name, profile)
	return nil
}

// ensureRole swaps whatever role the profile holds for role (a profile holds at most one).
func (p *Provider) ensureRole(ctx context.Context, profile *iamtypes.InstanceProfile, role string) error {
	role = role[strings.LastIndex(role, "/")+1:] // AddRoleToInstanceProfile takes the name without its path
	if len(profile.Roles) == 1 && aws.ToString(profile.Roles[0].RoleName) == role {
		return nil
	}
	for _, held := range profile.Roles {
		if _, err := p.api.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: profile.InstanceProfileName, RoleName: held.RoleName}); err != nil {
			return fmt.Errorf("removing role %s from instance profile %s, %w", aws.ToString(held.RoleName), aws.ToString(profile.InstanceProfileName), err)
		}
	}
	profile.Roles = nil
	if _, err := p.api.AddRoleToInstanceProfile(ctx, &iam.AddRoleToInstanceProfileInput{InstanceProfileName: profile.InstanceProfileName, RoleName: aws.String(role)}); err != nil {
		err = fmt.Errorf("adding role %s to instance profile %s, %w", role, aws.ToString(profile.InstanceProfileName), err)
		if IsRoleNotFound(err) {
			p.rolesMissing.Set(role, err)
		}
		return err
	}
	profile.Roles = []iamtypes.Role{{RoleName: aws.String(role)}}
	return nil
}

// Delete removes the profile's role and the profile; a profile already gone is not an error.
func (p *Provider) Delete(ctx context.Context, name string) error {
	p.profiles.Delete(name)
	out, err := p.api.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		if IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("getting instance profile %s, %w", name, err)
	}
	for _, r := range out.InstanceProfile.Roles {
		if _, err := p.api.RemoveRoleFromInstanceProfile(ctx, &iam.RemoveRoleFromInstanceProfileInput{InstanceProfileName: aws.String(name), RoleName: r.RoleName}); err != nil && !IsNotFound(err) {
			return fmt.Errorf("removing role %s from instance profile %s, %w", aws.ToString(r.RoleName), name, err)
		}
	}
	if _, err := p.api.DeleteInstanceProfile(ctx, &iam.DeleteInstanceProfileInput{InstanceProfileName: aws.String(name)}); err != nil && !IsNotFound(err) {
		return fmt.Errorf("deleting instance profile %s, %w", name, err)
	}
	return nil
}

// List returns the profiles under an IAM path prefix.
func (p *Provider) List(ctx context.Context, pathPrefix string) ([]iamtypes.InstanceProfile, error) {
	var out []iamtypes.InstanceProfile
	pages := iam.NewListInstanceProfilesPaginator(p.api, &iam.ListInstanceProfilesInput{PathPrefix: aws.String(pathPrefix)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing instance profiles under %s, %w", pathPrefix, err)
		}
		out = append(out, page.InstanceProfiles...)
	}
	return out, nil
}

// IsNotFound reports an IAM NoSuchEntity answer.
func IsNotFound(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchEntity"
}

// IsRoleNotFound reports a NoSuchEntity answer about a role (rather than the profile).
func IsRoleNotFound(err error) bool {
	var apiErr smithy.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode() == "NoSuchEntity" && strings.Contains(apiErr.ErrorMessage(), "role")
}

func iamTags(tags map[string]string) []iamtypes.Tag {
	out := make([]iamtypes.Tag, 0, len(tags))
	for k, v := range tags {
		out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(v)})
	}
	return out
}

func missingTags(have []iamtypes.Tag, want map[string]string) []iamtypes.Tag {
	held := map[string]string{}
	for _, t := range have {
		held[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	var out []iamtypes.Tag
	for k, v := range want {
		if cur, ok := held[k]; !ok || cur != v {
			out = append(out, iamtypes.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
	}
	return out
}
