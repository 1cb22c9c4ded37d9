package state

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// snapshotAttempts bounds how often Snapshot re-reads the stores when they change while it copies them.
const snapshotAttempts = 3

// Deps are what a Cluster needs.
type Deps struct {
	// Reader lists NodeClaims and Nodes for Synced. Pass the manager's cached client: Synced then checks
	// the stores against what the informers have seen, as the stores are fed from the same cache.
	Reader client.Reader
	// Clock measures how long the state has been unsynced.
	Clock clock.Clock
	// Registerer receives the cluster-state metrics.
	Registerer prometheus.Registerer
	// NominationWindow is how long a nomination to a Node holds (see NominationWindow); zero means
	// MinNominationWindow.
	NominationWindow time.Duration
}

// Cluster is the cluster view: the stores, the shared change stamp and the synced check. The stores are
// exported so each informer controller is handed only the store it feeds; readers should use Snapshot.
type Cluster struct {
	Nodes      *NodeStore
	Pods       *PodStore
	DaemonSets *DaemonSetStore
	PDBs       *PDBStore
	Deletions  *DeletionMarks
	// Scheduling remembers when pending pods were taken up and decided on (pod metrics).
	Scheduling *SchedulingTimes

	stamp   *Stamp
	window  time.Duration
	changes chan event.GenericEvent
	reader  client.Reader
	clock   clock.Clock
	metrics *clusterMetrics

	syncMu     sync.Mutex
	lastSynced time.Time // when Synced last returned true, or when the Cluster was built
}

// NewCluster returns an empty cluster view.
func NewCluster(deps Deps) *Cluster {
	stamp := &Stamp{}
	m := newClusterMetrics(deps.Registerer)
	return &Cluster{
		Scheduling: newSchedulingTimes(deps.Clock, m.decision),
		Nodes:      NewNodeStore(stamp),
		Pods:       NewPodStore(stamp),
		DaemonSets: NewDaemonSetStore(stamp),
		PDBs:       NewPDBStore(stamp),
		Deletions:  NewDeletionMarks(stamp),
		stamp:      stamp,
		window:     max(deps.NominationWindow, MinNominationWindow),
		changes:    make(chan event.GenericEvent, nominationBuffer),
		reader:     deps.Reader,
		clock:      deps.Clock,
		metrics:    m,
		lastSynced: deps.Clock.Now(),
	}
}

// ChangeStamp returns the monotonic change stamp: it grows whenever anything a scheduling or disruption
// decision depends on changes, and stays put otherwise.
func (c *Cluster) ChangeStamp() uint64 { return c.stamp.Value() }

// Synced reports whether the stores hold every NodeClaim and Node the cache has, each under its current
// provider ID. Decision loops must wait for it: deciding on a partial view launches duplicate nodes or
// disrupts nodes whose pods it cannot see. A failure to list counts as not synced.
func (c *Cluster) Synced(ctx context.Context) bool {
	synced, err := c.synced(ctx)
	if err != nil {
		log.FromContext(ctx).Error(err, "checking cluster state sync")
	}
	c.recordSync(synced)
	return synced
}

func (c *Cluster) synced(ctx context.Context) (bool, error) {
	// Only names and provider IDs are read, so the cache's own objects do, uncopied (controllers ask
	// often, and copying every NodeClaim and Node was a tenth of Lathe's CPU in a 1,000-pod scale-up).
	claims := &v1.NodeClaimList{}
	if err := c.reader.List(ctx, claims, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing nodeclaims, %w", err)
	}
	for i := range claims.Items {
		if !c.Nodes.hasNodeClaimAs(&claims.Items[i]) {
			return false, nil
		}
	}
	nodes := &corev1.NodeList{}
	if err := c.reader.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("listing nodes, %w", err)
	}
	for i := range nodes.Items {
		if !c.Nodes.hasNodeAt(nodes.Items[i].Name, nodeKey(&nodes.Items[i])) {
			return false, nil
		}
	}
	return true, nil
}

func (c *Cluster) recordSync(synced bool) {
	c.syncMu.Lock()
	defer c.syncMu.Unlock()
	now := c.clock.Now()
	c.metrics.nodeCount.Set(float64(c.Nodes.NodeCount()))
	if synced {
		c.lastSynced = now
		c.metrics.synced.Set(1)
		c.metrics.unsyncedTime.Set(0)
		return
	}
	c.metrics.synced.Set(0)
	c.metrics.unsyncedTime.Set(now.Sub(c.lastSynced).Seconds())
}

// Nominate records that the pending pod is planned onto target, now (see PodStore.Nominate), and announces a
// change on NominationChanges.
func (c *Cluster) Nominate(pod *corev1.Pod, target Target) {
	if !c.Pods.Nominate(pod, target, c.clock.Now()) {
		return
	}
	select {
	case c.changes <- event.GenericEvent{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}}:
	default: // nobody listens, or is behind: the listener also looks at pods on their own events
	}
}

// NominationChanges delivers the pods whose nomination Nominate changed, for one listener (the controller
// that tells the kube-scheduler). Changes are dropped while the listener is behind by nominationBuffer.
func (c *Cluster) NominationChanges() <-chan event.GenericEvent { return c.changes }

// nominationBuffer is how many nomination changes wait for the listener.
const nominationBuffer = 4096

// NodePoolResources returns what the NodePool's status.resources and status.nodes report (as Karpenter
// reports them): the summed capacity of the pool's launched machines that are not marked for deletion, with
// their count under "nodes". It is not what limits are checked against: that is Snapshot.NodePoolUsage,
// which also counts machines being deleted (until they are gone) and NodeClaims still launching.
func (c *Cluster) NodePoolResources(nodePool string) corev1.ResourceList {
	return c.Nodes.nodePoolResources(nodePool, c.Deletions.all())
}

// Snapshot returns a deep copy of the view. The stores are read one after the other; if they change while
// being read, Snapshot reads them again (a few times at most), so that normally the snapshot is consistent
// across stores and its Stamp describes it exactly.
func (c *Cluster) Snapshot() *Snapshot {
	var snap *Snapshot
	for range snapshotAttempts {
		before := c.stamp.Value()
		snap = c.read()
		snap.Stamp = before
		if c.stamp.Value() == before {
			break
		}
	}
	return snap
}

func (c *Cluster) read() *Snapshot {
	nodes := c.Nodes.view()
	names := make([]string, len(nodes.nodes))
	for i, e := range nodes.nodes {
		names[i] = e.node.Name
	}
	pods := c.Pods.views(names)
	noms := c.Pods.nominations()
	marks := c.Deletions.all()
	snap := &Snapshot{
		Nodes:         make([]*StateNode, 0, len(nodes.nodes)),
		InFlight:      make([]*InFlightNodeClaim, 0, len(nodes.inFlight)),
		DaemonSets:    c.DaemonSets.DaemonSets(),
		PDBs:          c.PDBs.PDBs(),
		NodePoolUsage: nodes.usage,
	}
	for i, e := range nodes.nodes {
		snap.Nodes = append(snap.Nodes, stateNode(nodes.keys[i], e, pods[e.node.Name], marks))
	}
	for i, e := range nodes.inFlight {
		snap.InFlight = append(snap.InFlight, inFlight(nodes.flyKeys[i], e, marks))
	}
	c.attachNominations(snap, nodes, marks, noms)
	return snap
}
