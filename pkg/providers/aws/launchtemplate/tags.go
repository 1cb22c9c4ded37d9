package launchtemplate

import ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

// withLaunchTags adds the tag specifications of what an instance launched from the template creates beyond
// what CreateFleet's own tag specifications reach (instance, volume, fleet): its network interface and,
// for a spot launch, its spot instance request, each with the instance's tags.
func withLaunchTags(data *ec2types.RequestLaunchTemplateData, in Input) *ec2types.RequestLaunchTemplateData {
	kinds := []ec2types.ResourceType{ec2types.ResourceTypeNetworkInterface}
	if in.TagSpotRequests {
		kinds = append(kinds, ec2types.ResourceTypeSpotInstancesRequest)
	}
	for _, kind := range kinds {
		data.TagSpecifications = append(data.TagSpecifications, ec2types.LaunchTemplateTagSpecificationRequest{ResourceType: kind, Tags: ec2Tags(in.Tags)})
	}
	return data
}
