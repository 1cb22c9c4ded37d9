package state

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Target is where the provisioner planned a pending pod: a NodeClaim (launched for it, or in flight and
// counted on), or an existing Node. Exactly one of the two is set.
type Target struct {
	NodeClaim string
	Node      string
}

// nomination is one pending pod's place in the plan, kept by the PodStore until the pod is bound or gone.
type nomination struct {
	pod    *corev1.Pod
	target Target
	at     time.Time
	// hint is the pod's status.nominatedNodeName as last seen (UpdatePod): the Node the kube-scheduler is
	// told to try first.
	hint string
}

// MinNominationWindow and NominationWindow give how long a nomination to a Node holds: twice the longest
// provisioning batch, at least 10 s, as Karpenter's nominationWindow (kubernetes-sigs/karpenter v1.14,
// pkg/controllers/state/statenode.go: max(2*BatchMaxDuration, 10s)). A pod nominated to a NodeClaim still
// in flight keeps its place for as long as the claim is in flight, its Node held by registration included
// (liveness deletes a claim that does not launch or register in time, and the nomination goes with it); the
// window starts once the claim is Registered and its Node Ready.
const MinNominationWindow = 10 * time.Second

// HintedWindowFactor is how many windows a nomination to a Node holds while the pod's status.nominatedNodeName
// names that Node. The kube-scheduler clears the hint when it tries the pod and cannot place it there, so a
// hint in place means the pod has not been turned away, only not tried yet: under load the kube-scheduler
// takes half a minute to come back to a pod (docs/performance.md, seventeenth session), and planning such a
// pod anew after one window moved its hint while the kube-scheduler was about to bind it to the old one. The
// hold stays short: writing a hint does not make the kube-scheduler retry a pod it set aside (a status change
// is no event its plugins requeue on), and with a two-minute hold, two of ten benchmark runs had hinted pods
// that it did not come back to wait out the two minutes before they were planned again.
const HintedWindowFactor = 2

// NominationWindow returns the window for the given BATCH_MAX_DURATION.
func NominationWindow(batchMaxDuration time.Duration) time.Duration {
	return max(2*batchMaxDuration, MinNominationWindow)
}

// Nominate records that the pending pod is planned onto target, at the given time. It replaces an earlier
// nomination of the pod. A bound or finished pod is not nominated.
// It reports whether the pod's nomination changed.
//
// The pod is the provisioning pass's copy, read before the pass planned: the store may know more. A pod it
// has seen bound since is not nominated (the binding's update came while the pass planned, and nothing would
// end a nomination made after it: the pod would hold room for itself on a second machine until the window
// ends, and a regrouping pass would plan it again). A replaced nomination keeps the hint the store last saw
// on the pod, which the pass's copy may not carry yet.
func (s *PodStore) Nominate(pod *corev1.Pod, target Target, at time.Time) bool {
	if pod.Spec.NodeName != "" {
		return false
	}
	key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}
	s.mu.Lock()
	defer s.mu.Unlock()
	if bound, ok := s.pods[key]; ok && bound.pod.UID == pod.UID {
		return false
	}
	hint := pod.Status.NominatedNodeName
	old, ok := s.nominated[key]
	if ok && old.pod.UID == pod.UID {
		if old.target == target {
			old.pod = pod.DeepCopy()
			return false
		}
		hint = old.hint
	}
	s.nominated[key] = &nomination{pod: pod.DeepCopy(), target: target, at: at, hint: hint}
	s.stamp.Bump()
	return true
}

// dropNomination drops the pod's nomination if it still names target, and reports whether it did.
func (s *PodStore) dropNomination(key types.NamespacedName, target Target) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.nominated[key]; !ok || n.target != target {
		return false
	}
	s.forgetNomination(key)
	return true
}

// forgetNomination drops the pod's nomination. Callers hold the write lock.
func (s *PodStore) forgetNomination(key types.NamespacedName) {
	if _, ok := s.nominated[key]; ok {
		delete(s.nominated, key)
		s.stamp.Bump()
	}
}

// nominations returns deep copies of every nomination, sorted by pod.
func (s *PodStore) nominations() []nomination {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]nomination, 0, len(s.nominated))
	for _, n := range s.nominated {
		out = append(out, nomination{pod: n.pod.DeepCopy(), target: n.target, at: n.at, hint: n.hint})
	}
	slices.SortFunc(out, func(a, b nomination) int {
		return cmp.Or(cmp.Compare(a.pod.Namespace, b.pod.Namespace), cmp.Compare(a.pod.Name, b.pod.Name))
	})
	return out
}

// nominationKey is a nomination without its pod object.
type nominationKey struct {
	pod    types.NamespacedName
	target Target
	at     time.Time
	hint   string
}

// nominationKeys returns every nomination's pod key, target and time, sorted by pod, copying no pod.
func (s *PodStore) nominationKeys() []nominationKey {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]nominationKey, 0, len(s.nominated))
	for key, n := range s.nominated {
		out = append(out, nominationKey{pod: key, target: n.target, at: n.at, hint: n.hint})
	}
	slices.SortFunc(out, func(a, b nominationKey) int {
		return cmp.Or(cmp.Compare(a.pod.Namespace, b.pod.Namespace), cmp.Compare(a.pod.Name, b.pod.Name))
	})
	return out
}

// NominatedWith returns the pods nominated to any of targets, whether or not the nominations still hold, in
// no particular order.
func (s *PodStore) NominatedWith(targets ...Target) []types.NamespacedName {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []types.NamespacedName
	for key, n := range s.nominated {
		if slices.Contains(targets, n.target) {
			out = append(out, key)
		}
	}
	return out
}

// nominationOf returns the pod's nomination without its pod object.
func (s *PodStore) nominationOf(key types.NamespacedName) (nominationKey, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n, ok := s.nominated[key]
	if !ok {
		return nominationKey{}, false
	}
	return nominationKey{pod: key, target: n.target, at: n.at, hint: n.hint}, true
}

// Nomination is a live nomination as Cluster.Nominations reports it.
type Nomination struct {
	Pod    types.NamespacedName
	Target Target
	// NodeName is the Node the pod is headed to: the target Node, or the Node of the target NodeClaim once
	// it exists; empty while the NodeClaim is in flight.
	NodeName string
	// Until is when the nomination expires; zero while its NodeClaim is in flight.
	Until time.Time
}

// liveness is the one rule for whether a nomination still holds (see NominationWindow): its target exists
// and is not marked for deletion, and the window has not passed since the latest of the nomination, the
// target's Node becoming Ready (else its creation) and its NodeClaim becoming Registered; while the pod's
// hint names the Node, the window is HintedWindowFactor times as long. A Node whose NodeClaim is not Registered
// yet is held by registration: the kube-scheduler cannot place pods there, and the nomination holds as for
// a claim in flight. It returns the Node name (empty while the claim has none) and the expiry (zero while in
// flight or held).
func (c *Cluster) liveness(at time.Time, hint string, m machineRef, now time.Time) (string, time.Time, bool) {
	if !m.found || m.marked {
		return "", time.Time{}, false
	}
	if m.node == "" {
		return "", time.Time{}, true
	}
	if m.held {
		return m.node, time.Time{}, true // in flight until the Node opens: hints may be written, nothing expires
	}
	start := at
	if m.usableSince.After(start) {
		start = m.usableSince
	}
	window := c.window
	if hint == m.node {
		window *= HintedWindowFactor
	}
	until := start.Add(window)
	return m.node, until, now.Before(until)
}

// machineRef is what liveness needs of the machine a nomination's target names: whether it exists and is
// marked for deletion, and its Node's name and nodeUsableSince (empty while the NodeClaim is in flight).
type machineRef struct {
	found, marked bool
	node          string
	usableSince   time.Time
	// held is set while the Node exists but its NodeClaim is not Registered: the kube-scheduler cannot place
	// pods there yet.
	held bool
}

// refOf reads the machineRef of an entry, copying nothing.
func refOf(key string, e *nodeEntry, marks map[string]struct{}) machineRef {
	if e == nil {
		return machineRef{}
	}
	m := machineRef{found: true, marked: markedForDeletion(key, e, marks)}
	if e.node != nil {
		m.node, m.usableSince = e.node.Name, nodeUsableSince(e.node)
		since, ok := registeredSince(e.claim)
		m.held = e.claim != nil && !ok
		if ok && since.After(m.usableSince) {
			m.usableSince = since
		}
	}
	return m
}

// registeredSince is when the NodeClaim became Registered (its Node shed the unregistered taint, and the
// kube-scheduler may place pods there); false while it is not, or for no claim.
func registeredSince(claim *v1.NodeClaim) (time.Time, bool) {
	if claim == nil {
		return time.Time{}, false
	}
	c := meta.FindStatusCondition(claim.Status.Conditions, v1.ConditionTypeRegistered)
	if c == nil || c.Status != metav1.ConditionTrue {
		return time.Time{}, false
	}
	return c.LastTransitionTime.Time, true
}

// nodeUsableSince is when the Node could first take pods: when it last became Ready, else when it was
// created. The window counts from there, so a loaded cluster bringing many nodes up at once does not expire
// nominations before the kube-scheduler can act on them.
func nodeUsableSince(node *corev1.Node) time.Time {
	since := node.CreationTimestamp.Time
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue && c.LastTransitionTime.After(since) {
			since = c.LastTransitionTime.Time
		}
	}
	return since
}

// entryView is a machine of a node view with its deletion mark.
type entryView struct {
	key   string
	entry *nodeEntry
}

// Nominations returns the live nominations, sorted by pod.
// It copies no object: the nomination controller asks on every Node and NodeClaim event.
func (c *Cluster) Nominations() []Nomination {
	marks := c.Deletions.all()
	now := c.clock.Now()
	var out []Nomination
	for _, n := range c.Pods.nominationKeys() {
		node, until, live := c.liveness(n.at, n.hint, c.Nodes.ref(n.target, marks), now)
		if live {
			out = append(out, Nomination{Pod: n.pod, Target: n.target, NodeName: node, Until: until})
		}
	}
	return out
}

// NominatedWith returns the pods nominated to any of targets (PodStore.NominatedWith).
func (c *Cluster) NominatedWith(targets ...Target) []types.NamespacedName {
	return c.Pods.NominatedWith(targets...)
}

// NominationOf returns the pod's live nomination, if it has one.
func (c *Cluster) NominationOf(pod types.NamespacedName) (Nomination, bool) {
	n, ok := c.Pods.nominationOf(pod)
	if !ok {
		return Nomination{}, false
	}
	node, until, live := c.liveness(n.at, n.hint, c.Nodes.ref(n.target, c.Deletions.all()), c.clock.Now())
	if !live {
		return Nomination{}, false
	}
	return Nomination{Pod: pod, Target: n.target, NodeName: node, Until: until}, true
}

// Reject ends the pod's nomination if it still sends the pod to the Node named node: the kube-scheduler
// tried the pod there with Lathe's hint and could not place it (pod.nomination tells), so the plan for the
// pod no longer holds and the next provisioning pass plans it again. It reports whether it ended one.
func (c *Cluster) Reject(pod types.NamespacedName, node string) bool {
	n, ok := c.NominationOf(pod)
	if !ok || n.NodeName != node {
		return false
	}
	return c.Pods.dropNomination(pod, n.Target)
}

// pick returns the machine a target names.
func pick(t Target, byClaim, byNode map[string]*entryView, marks map[string]struct{}) machineRef {
	ev := byNode[t.Node]
	if t.NodeClaim != "" {
		ev = byClaim[t.NodeClaim]
	}
	if ev == nil {
		return machineRef{}
	}
	return refOf(ev.key, ev.entry, marks)
}

// indexView indexes a node view's machines by NodeClaim name and Node name.
func indexView(v nodeView) (map[string]*entryView, map[string]*entryView) {
	byClaim, byNode := map[string]*entryView{}, map[string]*entryView{}
	add := func(key string, e *nodeEntry) {
		ev := &entryView{key: key, entry: e}
		if e.claim != nil {
			byClaim[e.claim.Name] = ev
		}
		if e.node != nil {
			byNode[e.node.Name] = ev
		}
	}
	for i, e := range v.nodes {
		add(v.keys[i], e)
	}
	for i, e := range v.inFlight {
		add(v.flyKeys[i], e)
	}
	return byClaim, byNode
}

// attachNominations adds each live nomination's pod to the snapshot's node or in-flight NodeClaim it is
// headed to.
func (c *Cluster) attachNominations(snap *Snapshot, v nodeView, marks map[string]struct{}, noms []nomination) {
	if len(noms) == 0 {
		return
	}
	byClaim, byNode := indexView(v)
	nodes := map[string]*StateNode{}
	for _, n := range snap.Nodes {
		nodes[n.Node.Name] = n
	}
	claims := map[string]*InFlightNodeClaim{}
	for _, f := range snap.InFlight {
		claims[f.NodeClaim.Name] = f
	}
	now := c.clock.Now()
	for _, n := range noms {
		node, _, live := c.liveness(n.at, n.hint, pick(n.target, byClaim, byNode, marks), now)
		switch {
		case !live:
		case node != "" && nodes[node] != nil:
			nodes[node].Nominated = append(nodes[node].Nominated, n.pod)
		case node == "" && claims[n.target.NodeClaim] != nil:
			claims[n.target.NodeClaim].Nominated = append(claims[n.target.NodeClaim].Nominated, n.pod)
		}
	}
}
