// Package fieldindextest is, for tests that drive controllers against the API server directly, a client that
// answers Lists by the fieldindex indexes as the manager's cache would, and records the Lists of NodeClaims
// and Nodes that used no index, so that a test can check a controller never lists every one.
package fieldindextest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex"
)

// Client wraps a client.Client.
type Client struct {
	client.Client

	mu        sync.Mutex
	unindexed []string
}

// NewClient returns the emulating client over c.
func NewClient(c client.Client) *Client { return &Client{Client: c} }

// UnindexedLists returns the kinds of the NodeClaim, Node and VolumeAttachment Lists made without an index,
// in call order.
func (c *Client) UnindexedLists() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.unindexed)
}

// List answers a List by an index by listing every object and keeping those the index finds.
func (c *Client) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	o := (&client.ListOptions{}).ApplyOptions(opts)
	ix, value, indexed := c.index(list, o)
	if !indexed {
		switch list.(type) {
		case *v1.NodeClaimList, *corev1.NodeList, *storagev1.VolumeAttachmentList:
			c.mu.Lock()
			c.unindexed = append(c.unindexed, fmt.Sprintf("%T", list))
			c.mu.Unlock()
		}
		return c.Client.List(ctx, list, opts...)
	}
	o.FieldSelector = nil
	if err := c.Client.List(ctx, list, o); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := slices.DeleteFunc(items, func(item runtime.Object) bool {
		return !slices.Contains(ix.Extract(item.(client.Object)), value)
	})
	return meta.SetList(list, kept)
}

// index returns the index a List's field selector asks for, and the value.
func (c *Client) index(list client.ObjectList, o *client.ListOptions) (fieldindex.Index, string, bool) {
	if o.FieldSelector == nil {
		return fieldindex.Index{}, "", false
	}
	gvk, err := apiutil.GVKForObject(list, c.Scheme())
	if err != nil {
		return fieldindex.Index{}, "", false
	}
	for _, ix := range fieldindex.Indexes() {
		objGVK, err := apiutil.GVKForObject(ix.Object, c.Scheme())
		if err != nil || objGVK.Kind+"List" != gvk.Kind || objGVK.GroupVersion() != gvk.GroupVersion() {
			continue
		}
		if value, ok := o.FieldSelector.RequiresExactMatch(ix.Field); ok {
			return ix, value, true
		}
	}
	return fieldindex.Index{}, "", false
}
