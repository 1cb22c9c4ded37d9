package termination

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
	"github.com/lathe-autoscaler/lathe/pkg/controllers/fieldindex"
)

// Reasons of the VolumesDetached condition.
const (
	reasonVolumesDetached               = "VolumesDetached"
	reasonAwaitingVolumeDetachment      = "AwaitingVolumeDetachment"
	reasonTerminationGracePeriodElapsed = "TerminationGracePeriodElapsed"
)

// awaitVolumeDetachment waits until no VolumeAttachment refers to the node, apart from those of volumes
// that pods staying on the node (DaemonSet pods, for example) use: those detach only with the instance.
// Once the termination deadline has passed it stops waiting.
func (c *Controller) awaitVolumeDetachment(ctx context.Context, node *corev1.Node, nodeClaim *v1.NodeClaim, deadline *time.Time) (time.Duration, error) {
	if deadlinePassed(deadline, c.clock.Now()) {
		_, err := c.setCondition(ctx, nodeClaim, v1.ConditionTypeVolumesDetached, metav1.ConditionFalse, reasonTerminationGracePeriodElapsed, "The termination grace period elapsed before the volumes detached")
		return 0, err
	}
	attached, err := c.attachedVolumes(ctx, node)
	if err != nil {
		return 0, err
	}
	if attached > 0 {
		log.FromContext(ctx).V(1).Info("waiting for volume attachments to be deleted", "volumeAttachments", attached)
		_, err := c.setCondition(ctx, nodeClaim, v1.ConditionTypeVolumesDetached, metav1.ConditionFalse, reasonAwaitingVolumeDetachment, "Waiting for VolumeAttachments to be deleted")
		return volumePollInterval, err
	}
	_, err = c.setCondition(ctx, nodeClaim, v1.ConditionTypeVolumesDetached, metav1.ConditionTrue, reasonVolumesDetached, "")
	return 0, err
}

// attachedVolumes counts the VolumeAttachments on the node that the drain should have released.
func (c *Controller) attachedVolumes(ctx context.Context, node *corev1.Node) (int, error) {
	list := &storagev1.VolumeAttachmentList{}
	if err := c.kube.List(ctx, list, client.MatchingFields{fieldindex.VolumeAttachmentNodeName: node.Name}); err != nil {
		return 0, fmt.Errorf("listing volume attachments, %w", err)
	}
	var onNode []storagev1.VolumeAttachment
	for _, va := range list.Items {
		if va.Spec.NodeName == node.Name {
			onNode = append(onNode, va)
		}
	}
	if len(onNode) == 0 {
		return 0, nil
	}
	kept, err := c.volumesOfStayingPods(ctx, node)
	if err != nil {
		return 0, err
	}
	count := 0
	for _, va := range onNode {
		if pv := va.Spec.Source.PersistentVolumeName; pv == nil || !kept[*pv] {
			count++
		}
	}
	return count, nil
}

// volumesOfStayingPods returns the names of the PersistentVolumes bound to the claims of pods that stay on
// the node.
func (c *Controller) volumesOfStayingPods(ctx context.Context, node *corev1.Node) (map[string]bool, error) {
	pods, err := c.podsOnNode(ctx, node.Name)
	if err != nil {
		return nil, err
	}
	now := c.clock.Now()
	volumes := map[string]bool{}
	for _, pod := range pods {
		if !staysOnNode(pod, now) {
			continue
		}
		for _, volume := range pod.Spec.Volumes {
			if volume.PersistentVolumeClaim == nil {
				continue
			}
			pvc := &corev1.PersistentVolumeClaim{}
			key := client.ObjectKey{Namespace: pod.Namespace, Name: volume.PersistentVolumeClaim.ClaimName}
			if err := c.kube.Get(ctx, key, pvc); err != nil {
				if client.IgnoreNotFound(err) == nil {
					continue
				}
				return nil, fmt.Errorf("getting persistent volume claim, %w", err)
			}
			if pvc.Spec.VolumeName != "" {
				volumes[pvc.Spec.VolumeName] = true
			}
		}
	}
	return volumes, nil
}
