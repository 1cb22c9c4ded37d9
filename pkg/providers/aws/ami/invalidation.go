package ami

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/filters"
)

// InvalidationInterval is how often cached "latest" parameters are checked for a deprecated image.
const InvalidationInterval = 30 * time.Minute

// InvalidateDeprecated forgets every cached mutable SSM parameter (an alias's latest or recommended)
// whose image is now deprecated, so that the next resolution reads the release that replaced it rather
// than waiting out the 24-hour lifetime, as Karpenter's SSM invalidation does.
func (p *Provider) InvalidateDeprecated(ctx context.Context) error {
	byImage := map[string][]string{}
	var ids []string
	for name, v := range p.params.Entries() {
		if !v.mutable {
			continue
		}
		if _, seen := byImage[v.value]; !seen {
			ids = append(ids, v.value)
		}
		byImage[v.value] = append(byImage[v.value], name)
	}
	if len(ids) == 0 {
		return nil
	}
	now := p.clock.Now()
	pages := ec2.NewDescribeImagesPaginator(p.ec2, &ec2.DescribeImagesInput{
		Filters: []ec2types.Filter{filters.One("image-id", ids...)}, IncludeDeprecated: aws.Bool(true), MaxResults: aws.Int32(1000),
	})
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describing the images of cached ssm parameters, %w", err)
		}
		for _, img := range out.Images {
			deprecation := aws.ToString(img.DeprecationTime)
			if deprecation == "" || parseTime(deprecation, now.Add(time.Hour)).After(now) {
				continue
			}
			for _, name := range byImage[aws.ToString(img.ImageId)] {
				p.params.Delete(name)
				log.FromContext(ctx).V(1).Info("invalidated ssm parameter of a deprecated image", "parameter", name, "image", aws.ToString(img.ImageId))
			}
		}
	}
	return nil
}

// InvalidationController runs InvalidateDeprecated every 30 minutes on the injected clock.
type InvalidationController struct {
	provider *Provider
	clock    clock.WithTicker
}

// NewInvalidationController returns the controller for the provider's SSM cache.
func NewInvalidationController(p *Provider, clk clock.WithTicker) *InvalidationController {
	return &InvalidationController{provider: p, clock: clk}
}

// Name is "providers.ssm.invalidation".
func (c *InvalidationController) Name() string { return "providers.ssm.invalidation" }

// Register adds the loop to the manager.
func (c *InvalidationController) Register(_ context.Context, mgr manager.Manager) error {
	return mgr.Add(manager.RunnableFunc(c.run))
}

func (c *InvalidationController) run(ctx context.Context) error {
	ticker := c.clock.NewTicker(InvalidationInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			if err := c.provider.InvalidateDeprecated(ctx); err != nil {
				log.FromContext(ctx).Error(err, "invalidating ssm parameters")
			}
		}
	}
}
