package aws

import (
	"context"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// SweepInterval is how often unused launch templates are looked for (the cleanup interval of Karpenter's
// launch template cache).
const SweepInterval = time.Minute

// TemplateSweeper deletes the launch templates nothing launched from for a while (launchtemplate.UnusedAfter),
// on the leader only. When it starts it registers the cluster's templates already in EC2, as Karpenter
// hydrates its cache on election, so that those an earlier Lathe or Karpenter left behind are deleted once
// nothing launches from them.
type TemplateSweeper struct {
	provider *CloudProvider
	clock    clock.WithTicker
}

// NewTemplateSweeper returns the sweeper of the provider's templates, ticking on clk when it has tickers
// (the real clock otherwise).
func NewTemplateSweeper(p *CloudProvider, clk clock.Clock) *TemplateSweeper {
	ticking, ok := clk.(clock.WithTicker)
	if !ok {
		ticking = clock.RealClock{}
	}
	return &TemplateSweeper{provider: p, clock: ticking}
}

// Name is "launchtemplate.garbagecollection".
func (s *TemplateSweeper) Name() string { return "launchtemplate.garbagecollection" }

// Register runs the sweeper with the manager.
func (s *TemplateSweeper) Register(_ context.Context, mgr manager.Manager) error { return mgr.Add(s) }

// NeedLeaderElection is true: one replica deletes.
func (s *TemplateSweeper) NeedLeaderElection() bool { return true }

// Start registers the cluster's templates, then sweeps every SweepInterval until ctx ends.
func (s *TemplateSweeper) Start(ctx context.Context) error {
	if err := s.provider.templates.Hydrate(ctx); err != nil {
		log.FromContext(ctx).Error(err, "listing the cluster's launch templates")
	}
	ticker := s.clock.NewTicker(SweepInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
			if err := s.provider.templates.DeleteUnused(ctx); err != nil {
				log.FromContext(ctx).Error(err, "deleting unused launch templates")
			}
		}
	}
}
