package fakeaws

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// KarpenterPolicy makes the fake answer as AWS does for a controller role that holds only Karpenter
// v1.14's getting-started controller policy (its CloudFormation template's NodeLifecycle, IAMIntegration,
// EKSIntegration and ResourceDiscovery policies) for the cluster: an action no statement names is refused,
// and the statements' tag conditions are checked.
//
//   - EC2 reads (the ResourceDiscovery list, in the fake's region only) are allowed; DescribeAvailabilityZones
//     is not among them.
//   - CreateLaunchTemplate: the template's tags must hold kubernetes.io/cluster/<cluster>=owned,
//     eks:eks-cluster-name=<cluster> and a karpenter.sh/nodepool tag.
//   - CreateFleet: every launch template it uses must carry kubernetes.io/cluster/<cluster>=owned and a
//     karpenter.sh/nodepool tag, and every resource it creates (fleet, instance, volume, network interface,
//     and the spot instance request of a spot fleet) must be requested with the three tags above, from the
//     fleet's tag specifications (fleet, instance, volume) or the launch template data's (instance, volume,
//     network interface, spot instance request).
//   - CreateTags outside a create call: instances only, which must carry the cluster and node pool tags,
//     with keys among eks:eks-cluster-name (=<cluster>), karpenter.sh/nodeclaim and Name.
//   - TerminateInstances and DeleteLaunchTemplate: the resources must carry the cluster and node pool tags.
//   - IAM: ListInstanceProfiles and GetInstanceProfile; CreateInstanceProfile with the cluster, EKS, region
//     (topology.kubernetes.io/region=<region>) and karpenter.k8s.aws/ec2nodeclass tags; TagInstanceProfile
//     on a profile tagged with the cluster, region and node class, requesting all four; Add/Remove role and
//     DeleteInstanceProfile on such a profile.
//   - SSM GetParameter under /aws/service/, Pricing GetProducts, EKS DescribeCluster of the cluster, and
//     SQS GetQueueUrl, ReceiveMessage and DeleteMessage on the queue named after the cluster.
//
// A call on a resource the fake doesn't know is left to the handler (which answers not found). Not modelled:
// iam:PassRole, RunInstances, the interruption queue (SQS) and zonal shift statements.
type KarpenterPolicy struct {
	ClusterName string

	mu      sync.Mutex
	denials []string
}

// PolicyDenials lists the calls the enforced policy refused, as "service:Action: reason", oldest first
// (none without a policy).
func (s *Server) PolicyDenials() []string {
	p := s.opts.EnforcePolicy
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.denials)
}

// refuse records a refused call and returns its answer.
func (p *KarpenterPolicy) refuse(code string, status int, service, action string, d *policyDenial) *apiError {
	p.mu.Lock()
	p.denials = append(p.denials, service+":"+action+": "+d.reason)
	p.mu.Unlock()
	return &apiError{Code: code, Status: status, Message: deniedMessage(p, service, action, d)}
}

// Tag keys the policy's conditions name.
const (
	policyEKSClusterTag = "eks:eks-cluster-name"
	policyNodePoolTag   = "karpenter.sh/nodepool"
	policyNodeClassTag  = "karpenter.k8s.aws/ec2nodeclass"
	policyRegionTag     = "topology.kubernetes.io/region"
)

// policyEC2Reads are the EC2 actions of AllowRegionalReadActions.
var policyEC2Reads = []string{
	"DescribeCapacityReservations", "DescribeImages", "DescribeInstances", "DescribeInstanceStatus",
	"DescribeInstanceTypeOfferings", "DescribeInstanceTypes", "DescribeLaunchTemplates", "DescribePlacementGroups",
	"DescribeSecurityGroups", "DescribeSpotPriceHistory", "DescribeSubnets",
}

// fleetTaggable are the resource types an instant fleet's own tag specifications reach; the network
// interface and the spot request are tagged through the launch template only.
var fleetTaggable = map[string]bool{"fleet": true, "instance": true, "volume": true}

// policyTaggableKeys are the keys AllowScopedResourceTagging lets CreateTags add to an instance.
var policyTaggableKeys = []string{policyEKSClusterTag, "karpenter.sh/nodeclaim", "Name"}

// credentialRegion finds the region in a SigV4 Authorization header.
var credentialRegion = regexp.MustCompile(`Credential=[^/]+/[^/]+/([^/]+)/[^/]+/aws4_request`)

func (p *KarpenterPolicy) clusterTag() string { return "kubernetes.io/cluster/" + p.ClusterName }

// requestTagProblem says which of the tags a created resource must be requested with are missing.
func (p *KarpenterPolicy) requestTagProblem(tags map[string]string) string {
	var missing []string
	if tags[p.clusterTag()] != "owned" {
		missing = append(missing, p.clusterTag()+"=owned")
	}
	if tags[policyEKSClusterTag] != p.ClusterName {
		missing = append(missing, policyEKSClusterTag+"="+p.ClusterName)
	}
	if _, ok := tags[policyNodePoolTag]; !ok {
		missing = append(missing, policyNodePoolTag)
	}
	return tagProblem("request tag", missing)
}

// resourceTagProblem says which of the tags an EC2 resource must carry to be used or deleted are missing.
func (p *KarpenterPolicy) resourceTagProblem(tags map[string]string) string {
	var missing []string
	if tags[p.clusterTag()] != "owned" {
		missing = append(missing, p.clusterTag()+"=owned")
	}
	if _, ok := tags[policyNodePoolTag]; !ok {
		missing = append(missing, policyNodePoolTag)
	}
	return tagProblem("resource tag", missing)
}

// profileTagProblem says which of the tags an instance profile (kind "resource tag") or a request for one
// (kind "request tag", which also needs the EKS tag) lacks.
func (p *KarpenterPolicy) profileTagProblem(kind, region string, tags map[string]string) string {
	var missing []string
	if tags[p.clusterTag()] != "owned" {
		missing = append(missing, p.clusterTag()+"=owned")
	}
	if kind == "request tag" && tags[policyEKSClusterTag] != p.ClusterName {
		missing = append(missing, policyEKSClusterTag+"="+p.ClusterName)
	}
	if tags[policyRegionTag] != region {
		missing = append(missing, policyRegionTag+"="+region)
	}
	if _, ok := tags[policyNodeClassTag]; !ok {
		missing = append(missing, policyNodeClassTag)
	}
	return tagProblem(kind, missing)
}

func tagProblem(kind string, missing []string) string {
	if len(missing) == 0 {
		return ""
	}
	return "missing " + kind + " " + strings.Join(missing, ", ")
}

// policyDenial is a refused call: the resource it was refused on and why.
type policyDenial struct{ resource, reason string }

// authorizeQuery decides an EC2 or IAM call; nil when no policy is enforced or the policy allows it.
func (s *Server) authorizeQuery(r *http.Request, service, action string, q query) *apiError {
	p := s.opts.EnforcePolicy
	if p == nil {
		return nil
	}
	var d *policyDenial
	switch service {
	case "ec2":
		if region := requestRegion(r); region != s.opts.Region {
			d = &policyDenial{"*", fmt.Sprintf("aws:RequestedRegion %s is not %s", region, s.opts.Region)}
		} else {
			d = s.ec2Denial(p, action, q)
		}
		if d != nil {
			return p.refuse("UnauthorizedOperation", http.StatusForbidden, service, action, d)
		}
	case "iam":
		if d = s.iamDenial(p, action, q); d != nil {
			return p.refuse("AccessDenied", http.StatusForbidden, service, action, d)
		}
	}
	return nil
}

// authorizeJSON decides an SSM or Pricing call.
func (s *Server) authorizeJSON(r *http.Request, service, op string, body []byte) *apiError {
	p := s.opts.EnforcePolicy
	if p == nil {
		return nil
	}
	var d *policyDenial
	switch {
	case service == "ssm" && op == "GetParameter":
		var in struct{ Name string }
		_ = decodeJSON(body, &in) // the handler answers a malformed body
		if !strings.HasPrefix(in.Name, "/aws/service/") || requestRegion(r) != s.opts.Region {
			d = &policyDenial{fmt.Sprintf("arn:aws:ssm:%s:%s:parameter%s", requestRegion(r), Account, in.Name), "AllowSSMReadActions covers only public parameters under /aws/service/ of the region"}
		}
	case service == "pricing" && op == "GetProducts":
	case service == "sqs" && (op == "GetQueueUrl" || op == "ReceiveMessage" || op == "DeleteMessage"):
		// AllowInterruptionQueueActions: the queue the template creates, named after the cluster.
		var in struct{ QueueName, QueueUrl string }
		_ = decodeJSON(body, &in)
		name := in.QueueName
		if name == "" {
			name = in.QueueUrl[strings.LastIndex(in.QueueUrl, "/")+1:]
		}
		if name != p.ClusterName || requestRegion(r) != s.opts.Region {
			d = &policyDenial{fmt.Sprintf("arn:aws:sqs:%s:%s:%s", requestRegion(r), Account, name), "AllowInterruptionQueueActions covers only the queue named after the cluster"}
		}
	default:
		d = &policyDenial{"*", "no statement allows it"}
	}
	if d == nil {
		return nil
	}
	return p.refuse("AccessDeniedException", http.StatusBadRequest, service, op, d)
}

// authorizeREST decides an EKS call: DescribeCluster of the policy's cluster only.
func (s *Server) authorizeREST(r *http.Request, service, op, rest string) *apiError {
	p := s.opts.EnforcePolicy
	if p == nil || (service == "eks" && op == "DescribeCluster" && rest == p.ClusterName && requestRegion(r) == s.opts.Region) {
		return nil
	}
	d := &policyDenial{fmt.Sprintf("arn:aws:eks:%s:%s:cluster/%s", requestRegion(r), Account, rest), "AllowAPIServerEndpointDiscovery covers only cluster " + p.ClusterName}
	return p.refuse("AccessDeniedException", http.StatusForbidden, service, op, d)
}

// deniedMessage reads like AWS's, with the fake's reason appended.
func deniedMessage(p *KarpenterPolicy, service, action string, d *policyDenial) string {
	return fmt.Sprintf("User: arn:aws:sts::%s:assumed-role/KarpenterControllerRole-%s/lathe is not authorized to perform: %s:%s on resource: %s "+
		"because no identity-based policy allows the %s:%s action (fakeaws KarpenterPolicy: %s)", Account, p.ClusterName, service, action, d.resource, service, action, d.reason)
}

func requestRegion(r *http.Request) string {
	if m := credentialRegion.FindStringSubmatch(r.Header.Get("Authorization")); m != nil {
		return m[1]
	}
	return ""
}

func (s *Server) ec2Denial(p *KarpenterPolicy, action string, q query) *policyDenial {
	switch action {
	case "CreateLaunchTemplate":
		if why := p.requestTagProblem(tagSpecifications(q, "TagSpecification")["launch-template"]); why != "" {
			return &policyDenial{s.ec2ARN("launch-template", "*"), why}
		}
		return nil
	case "CreateFleet":
		return s.fleetDenial(p, q)
	case "CreateTags":
		return s.createTagsDenial(p, q)
	case "TerminateInstances":
		return s.taggedResourcesDenial(p, "instance", q.Strings("InstanceId"))
	case "DeleteLaunchTemplate":
		return s.taggedResourcesDenial(p, "launch-template", []string{cmp.Or(q["LaunchTemplateId"], q["LaunchTemplateName"])})
	}
	if slices.Contains(policyEC2Reads, action) {
		return nil
	}
	return &policyDenial{"*", "no statement allows it"}
}

func (s *Server) ec2ARN(kind, id string) string {
	return fmt.Sprintf("arn:aws:ec2:%s:%s:%s/%s", s.opts.Region, Account, kind, id)
}

// fleetDenial checks the launch templates a fleet uses and the tags of everything it creates.
func (s *Server) fleetDenial(p *KarpenterPolicy, q query) *policyDenial {
	requested := tagSpecifications(q, "TagSpecification")
	if why := p.requestTagProblem(requested["fleet"]); why != "" {
		return &policyDenial{s.ec2ARN("fleet", "*"), why}
	}
	created := []string{"instance", "volume", "network-interface"}
	if q["TargetCapacitySpecification.DefaultTargetCapacityType"] == "spot" {
		created = append(created, "spot-instances-request")
	}
	var d *policyDenial
	s.withState(func(st *state) {
		for _, cfg := range q.List("LaunchTemplateConfigs") {
			lt := st.launchTemplates.find(cfg["LaunchTemplateSpecification.LaunchTemplateName"], cfg["LaunchTemplateSpecification.LaunchTemplateId"])
			if lt == nil {
				continue // the handler answers that it doesn't exist
			}
			if why := p.resourceTagProblem(lt.tags); why != "" {
				d = &policyDenial{s.ec2ARN("launch-template", lt.id), why}
				return
			}
			for _, kind := range created {
				tags := map[string]string{}
				maps.Copy(tags, lt.data.TagSpecifications[kind])
				if fleetTaggable[kind] {
					maps.Copy(tags, requested[kind])
				}
				if why := p.requestTagProblem(tags); why != "" {
					d = &policyDenial{s.ec2ARN(kind, "*"), why + " (launching from " + lt.name + ")"}
					return
				}
			}
		}
	})
	return d
}

// createTagsDenial checks a CreateTags call outside a create action (AllowScopedResourceTagging).
func (s *Server) createTagsDenial(p *KarpenterPolicy, q query) *policyDenial {
	for _, t := range q.List("Tag") {
		if !slices.Contains(policyTaggableKeys, t["Key"]) {
			return &policyDenial{s.ec2ARN("instance", "*"), fmt.Sprintf("aws:TagKeys %q is not one of %s", t["Key"], strings.Join(policyTaggableKeys, ", "))}
		}
		if t["Key"] == policyEKSClusterTag && t["Value"] != p.ClusterName {
			return &policyDenial{s.ec2ARN("instance", "*"), "request tag " + policyEKSClusterTag + " is not " + p.ClusterName}
		}
	}
	ids := q.Strings("ResourceId")
	for _, id := range ids {
		if !strings.HasPrefix(id, "i-") {
			return &policyDenial{id, "only instances may be tagged after their creation"}
		}
	}
	return s.taggedResourcesDenial(p, "instance", ids)
}

// taggedResourcesDenial checks that the instances or launch templates carry the cluster and node pool tags.
func (s *Server) taggedResourcesDenial(p *KarpenterPolicy, kind string, ids []string) *policyDenial {
	var d *policyDenial
	s.withState(func(st *state) {
		for _, id := range ids {
			var tags map[string]string
			switch kind {
			case "instance":
				in := st.instances.byID[id]
				if in == nil {
					continue
				}
				tags = in.Tags
			case "launch-template":
				lt := st.launchTemplates.find(id, id)
				if lt == nil {
					continue
				}
				id, tags = lt.id, lt.tags
			}
			if why := p.resourceTagProblem(tags); why != "" {
				d = &policyDenial{s.ec2ARN(kind, id), why}
				return
			}
		}
	})
	return d
}

func (s *Server) iamDenial(p *KarpenterPolicy, action string, q query) *policyDenial {
	name := q["InstanceProfileName"]
	resource := fmt.Sprintf("arn:aws:iam::%s:instance-profile/%s", Account, name)
	switch action {
	case "ListInstanceProfiles", "GetInstanceProfile":
		return nil
	case "CreateInstanceProfile":
		if why := p.profileTagProblem("request tag", s.opts.Region, iamTagsOf(q)); why != "" {
			return &policyDenial{resource, why}
		}
		return nil
	case "TagInstanceProfile", "AddRoleToInstanceProfile", "RemoveRoleFromInstanceProfile", "DeleteInstanceProfile":
		var (
			tags  map[string]string
			known bool
		)
		s.withState(func(st *state) {
			if prof, ok := st.iam.profiles[name]; ok {
				tags, known = maps.Clone(prof.Tags), true
			}
		})
		if !known {
			return nil // the handler answers NoSuchEntity
		}
		if why := p.profileTagProblem("resource tag", s.opts.Region, tags); why != "" {
			return &policyDenial{resource, why}
		}
		if action == "TagInstanceProfile" {
			if why := p.profileTagProblem("request tag", s.opts.Region, iamTagsOf(q)); why != "" {
				return &policyDenial{resource, why}
			}
		}
		return nil
	}
	return &policyDenial{"*", "no statement allows it"}
}
