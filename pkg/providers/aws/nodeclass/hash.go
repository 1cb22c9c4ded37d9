package nodeclass

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// HashController keeps the ec2nodeclass-hash annotations of EC2NodeClasses.
type HashController struct {
	client   client.Client
	caBundle *string
}

// NewHashController returns the hash controller; caBundle is the cluster CA bundle setting (nil if unset),
// which Karpenter hashes with the spec.
func NewHashController(c client.Client, caBundle *string) *HashController {
	return &HashController{client: c, caBundle: caBundle}
}

// Name is "nodeclass.hash".
func (c *HashController) Name() string { return "nodeclass.hash" }

// Register watches EC2NodeClasses.
func (c *HashController) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).For(&awsv1.EC2NodeClass{}).Complete(c)
}

// Reconcile writes the node class's hash and hash version; when the version changes it first re-stamps the
// NodeClaims of the class (those not already marked drifted get the new hash, so the scheme change alone
// drifts nothing).
func (c *HashController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nodeClass := &awsv1.EC2NodeClass{}
	if err := c.client.Get(ctx, req.NamespacedName, nodeClass); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !nodeClass.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	hash := nodeClass.Hash(c.caBundle)
	if nodeClass.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] != awsv1.EC2NodeClassHashVersion {
		if err := c.restampNodeClaims(ctx, nodeClass.Name, hash); err != nil {
			return reconcile.Result{}, err
		}
	}
	if nodeClass.Annotations[awsv1.AnnotationEC2NodeClassHash] == hash && nodeClass.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == awsv1.EC2NodeClassHashVersion {
		return reconcile.Result{}, nil
	}
	stored := nodeClass.DeepCopy()
	setHash(nodeClass, hash)
	if err := c.client.Patch(ctx, nodeClass, client.MergeFrom(stored)); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching ec2nodeclass hash, %w", err))
	}
	return reconcile.Result{}, nil
}

func (c *HashController) restampNodeClaims(ctx context.Context, nodeClass, hash string) error {
	names, err := NodeClaimsUsing(ctx, c.client, nodeClass)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		nc := &v1.NodeClaim{}
		if err := c.client.Get(ctx, client.ObjectKey{Name: name}, nc); err != nil {
			errs = append(errs, client.IgnoreNotFound(err))
			continue
		}
		if nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] == awsv1.EC2NodeClassHashVersion {
			continue
		}
		stored := nc.DeepCopy()
		if nc.Annotations == nil {
			nc.Annotations = map[string]string{}
		}
		nc.Annotations[awsv1.AnnotationEC2NodeClassHashVersion] = awsv1.EC2NodeClassHashVersion
		if !hasCondition(nc, v1.ConditionTypeDrifted) {
			nc.Annotations[awsv1.AnnotationEC2NodeClassHash] = hash
		}
		if err := c.client.Patch(ctx, nc, client.MergeFrom(stored)); err != nil {
			errs = append(errs, client.IgnoreNotFound(fmt.Errorf("patching nodeclaim hash, %w", err)))
		}
	}
	return errors.Join(errs...)
}

func setHash(obj client.Object, hash string) {
	annotations := obj.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[awsv1.AnnotationEC2NodeClassHash] = hash
	annotations[awsv1.AnnotationEC2NodeClassHashVersion] = awsv1.EC2NodeClassHashVersion
	obj.SetAnnotations(annotations)
}

func hasCondition(nc *v1.NodeClaim, condType string) bool {
	for _, c := range nc.Status.Conditions {
		if c.Type == condType {
			return true
		}
	}
	return false
}
