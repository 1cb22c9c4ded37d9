package filters

import (
	"context"
	"slices"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/utils/clock"

	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/ttlcache"
)

// Resolver answers selector terms with the EC2 objects they select: one Describe per filter set, each
// object once (by ID), in the resolver's order, and the answer cached for a while per set of terms. The
// subnet and security group providers are resolvers.
type Resolver[T any] struct {
	cache *ttlcache.Cache[string, []T]
	// describe lists (all pages of) what one filter set selects.
	describe func(ctx context.Context, filters []ec2types.Filter) ([]T, error)
	id       func(T) string
	compare  func(a, b T) int
}

// NewResolver returns a resolver whose answers live for ttl on clk.
func NewResolver[T any](clk clock.PassiveClock, ttl time.Duration, describe func(context.Context, []ec2types.Filter) ([]T, error),
	id func(T) string, compare func(a, b T) int) *Resolver[T] {
	return &Resolver[T]{cache: ttlcache.New[string, []T](clk, ttl), describe: describe, id: id, compare: compare}
}

// List returns what any of the filter sets selects; key names the terms they came from (Key(terms)). The
// caller owns the returned slice.
func (r *Resolver[T]) List(ctx context.Context, key string, sets [][]ec2types.Filter) ([]T, error) {
	if cached, ok := r.cache.Get(key); ok {
		return slices.Clone(cached), nil
	}
	byID := map[string]T{}
	for _, fs := range sets {
		found, err := r.describe(ctx, fs)
		if err != nil {
			return nil, err
		}
		for _, o := range found {
			byID[r.id(o)] = o
		}
	}
	out := make([]T, 0, len(byID))
	for _, o := range byID {
		out = append(out, o)
	}
	slices.SortFunc(out, r.compare)
	r.cache.Set(key, out)
	return slices.Clone(out), nil
}
