package aws

import (
	"context"
	"fmt"
	"slices"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// regionZones are the zones of the region's subnets, sorted. They come from DescribeSubnets rather than
// DescribeAvailabilityZones because Karpenter's controller policy allows the former and not the latter;
// a zone without a subnet is one no node can launch in anyway. No subnet at all leaves the zones to New's
// default.
func regionZones(ctx context.Context, api ec2.DescribeSubnetsAPIClient) ([]string, error) {
	var zones []string
	pages := ec2.NewDescribeSubnetsPaginator(api, &ec2.DescribeSubnetsInput{MaxResults: sdkaws.Int32(1000)})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the region's subnets for its zones, %w", err)
		}
		for _, s := range page.Subnets {
			if z := sdkaws.ToString(s.AvailabilityZone); z != "" && !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	slices.Sort(zones)
	return zones, nil
}
