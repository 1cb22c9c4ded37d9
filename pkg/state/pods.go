package state

import (
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lathe-autoscaler/lathe/pkg/scheduling"
)

// HostPort is a host port a bound pod holds on its node.
type HostPort struct {
	IP       string
	Protocol corev1.Protocol
	Port     int32
}

// PodStore holds the pods bound to nodes: pods with spec.nodeName set that have not finished. Pending pods
// are the provisioner's business and are not kept here.
type PodStore struct {
	stamp *Stamp

	mu        sync.RWMutex
	pods      map[types.NamespacedName]*boundPod
	byNode    map[string]map[types.NamespacedName]struct{} // Node name → pods bound to it
	nominated map[types.NamespacedName]*nomination         // pending pods → where the provisioner planned them
}

// boundPod is a pod with what it takes from its node, worked out once when the pod is stored.
type boundPod struct {
	pod       *corev1.Pod
	requests  corev1.ResourceList
	hostPorts []HostPort
	daemon    bool
}

// NewPodStore returns an empty store that bumps stamp on every relevant change.
func NewPodStore(stamp *Stamp) *PodStore {
	return &PodStore{
		stamp:     stamp,
		pods:      map[types.NamespacedName]*boundPod{},
		byNode:    map[string]map[types.NamespacedName]struct{}{},
		nominated: map[types.NamespacedName]*nomination{},
	}
}

// UpdatePod stores a bound pod, or forgets it when it is not bound (any more) or has finished. The store keeps
// its own copy. A pod that is bound, finished or another pod under the same name loses its nomination.
func (s *PodStore) UpdatePod(pod *corev1.Pod) {
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	if pod.Spec.NodeName == "" && !scheduling.IsTerminal(pod) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.unbindLocked(key)
		if n, ok := s.nominated[key]; ok && n.pod.UID != pod.UID {
			s.forgetNomination(key)
		} else if ok && n.hint != pod.Status.NominatedNodeName {
			n.hint = pod.Status.NominatedNodeName // how long the nomination holds depends on it (liveness)
			s.stamp.Bump()
		}
		return
	}
	if scheduling.IsTerminal(pod) {
		s.DeletePod(key)
		return
	}
	bp := &boundPod{
		pod:       pod.DeepCopy(),
		requests:  scheduling.PodRequests(pod),
		hostPorts: hostPorts(pod),
		daemon:    scheduling.IsDaemonSetPod(pod),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetNomination(key)
	old, existed := s.pods[key]
	if existed && old.pod.Spec.NodeName != pod.Spec.NodeName {
		s.unindex(key, old.pod.Spec.NodeName)
	}
	s.pods[key] = bp
	if s.byNode[pod.Spec.NodeName] == nil {
		s.byNode[pod.Spec.NodeName] = map[types.NamespacedName]struct{}{}
	}
	s.byNode[pod.Spec.NodeName][key] = struct{}{}
	if !existed || podChanged(old, bp) {
		s.stamp.Bump()
	}
}

// podChanged reports whether a decision could tell the two versions of a bound pod apart: its node, what
// it takes from the node, its labels (topology spread and pod affinity count them), its annotations
// (karpenter.sh/do-not-disrupt) and whether it is terminating. Status churn such as readiness is left out.
func podChanged(old, new *boundPod) bool {
	return old.pod.Spec.NodeName != new.pod.Spec.NodeName ||
		!equality.Semantic.DeepEqual(old.requests, new.requests) ||
		!slices.Equal(old.hostPorts, new.hostPorts) ||
		!maps.Equal(old.pod.Labels, new.pod.Labels) ||
		!maps.Equal(old.pod.Annotations, new.pod.Annotations) ||
		(old.pod.DeletionTimestamp == nil) != (new.pod.DeletionTimestamp == nil)
}

// DeletePod forgets the pod and its nomination, if the store has them.
func (s *PodStore) DeletePod(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetNomination(key)
	s.unbindLocked(key)
}

// unbindLocked forgets the bound pod. Callers hold the write lock.
func (s *PodStore) unbindLocked(key types.NamespacedName) {
	old, ok := s.pods[key]
	if !ok {
		return
	}
	delete(s.pods, key)
	s.unindex(key, old.pod.Spec.NodeName)
	s.stamp.Bump()
}

// Requested returns the summed requests of the pods bound to the node.
func (s *PodStore) Requested(nodeName string) corev1.ResourceList {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.nodeUsage(nodeName).requested
}

// PodCount returns how many bound pods the store has.
func (s *PodStore) PodCount() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.pods)
}

// nodePods is a deep-copied read of one node's pods.
type nodePods struct {
	pods         []*corev1.Pod // sorted by namespace/name
	requested    corev1.ResourceList
	daemonsetReq corev1.ResourceList
	hostPorts    []HostPort
}

// views returns deep copies of the pods bound to each of the named nodes.
func (s *PodStore) views(nodeNames []string) map[string]nodePods {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make(map[string]nodePods, len(nodeNames))
	for _, name := range nodeNames {
		out[name] = s.nodeUsage(name)
	}
	return out
}

// nodeUsage deep-copies one node's pods and sums them. Callers hold the read lock.
func (s *PodStore) nodeUsage(nodeName string) nodePods {
	keys := make([]types.NamespacedName, 0, len(s.byNode[nodeName]))
	for k := range s.byNode[nodeName] {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, compareNN)
	np := nodePods{requested: corev1.ResourceList{}, daemonsetReq: corev1.ResourceList{}}
	for _, k := range keys {
		bp := s.pods[k]
		np.pods = append(np.pods, bp.pod.DeepCopy())
		scheduling.AddResources(np.requested, bp.requests)
		if bp.daemon {
			scheduling.AddResources(np.daemonsetReq, bp.requests)
		}
		np.hostPorts = append(np.hostPorts, bp.hostPorts...)
	}
	return np
}

// unindex removes the pod from its node's index. Callers hold the write lock.
func (s *PodStore) unindex(key types.NamespacedName, nodeName string) {
	delete(s.byNode[nodeName], key)
	if len(s.byNode[nodeName]) == 0 {
		delete(s.byNode, nodeName)
	}
}

// hostPorts lists the host ports the pod's containers (including init and sidecar containers) hold.
func hostPorts(pod *corev1.Pod) []HostPort {
	var out []HostPort
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range containers {
			for _, p := range c.Ports {
				if p.HostPort == 0 {
					continue
				}
				protocol := p.Protocol
				if protocol == "" {
					protocol = corev1.ProtocolTCP
				}
				out = append(out, HostPort{IP: p.HostIP, Protocol: protocol, Port: p.HostPort})
			}
		}
	}
	return out
}
