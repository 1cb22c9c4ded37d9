package environment

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// StaleReadClient returns a client of the environment's API server whose every Get is followed by
// meanwhile, given a copy of the object just read: another writer's change, which leaves the caller deciding
// from a stale copy. An error of meanwhile is the Get's.
func (e *Environment) StaleReadClient(meanwhile func(ctx context.Context, read client.Object) error) (client.Client, error) {
	direct, err := client.NewWithWatch(e.Config, client.Options{Scheme: e.Scheme})
	if err != nil {
		return nil, fmt.Errorf("building a client, %w", err)
	}
	return interceptor.NewClient(direct, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if err := c.Get(ctx, key, obj, opts...); err != nil {
				return err
			}
			return meanwhile(ctx, obj.DeepCopyObject().(client.Object))
		},
	}), nil
}
