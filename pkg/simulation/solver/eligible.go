package solver

import v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"

// hostLimit is a hostname-keyed condition of a pod: a claim already counting more than limit pods of the
// group (by id) refuses it. Required (or not yet relaxed) hostname anti-affinity, the anti-affinity of
// others that selects the pod and a hostname spread (limit maxSkew minus the pod itself, as the minimum
// over hostnames is always 0) all take this form, and a claim that breaks one never takes the pod.
type hostLimit struct{ group, limit int }

// eligibleList holds, in the same order as run.open, the open claims that meet one hostLimit. Counts only
// grow while pods are placed, so a claim leaves the list for good once it breaks the limit. A pod scans
// the shortest list among its conditions instead of every open claim: the claims it skips are exactly
// those evaluate would refuse, and refusals neither end the scan nor count toward its bounds, so the
// result is the same as a scan of every claim, without its cost growing with the claims it can't use.
type eligibleList struct {
	key    hostLimit
	claims claimList
}

// maxEligibleLists bounds the lists kept, since each costs every placement an update, and lets a claim
// record the lists it is in as the bits of target.eligibleIn; pods whose conditions have no list scan
// every open claim, as before.
const maxEligibleLists = 64

func hostCount(t *target, group int) int {
	if group < len(t.hostCounts) {
		return int(t.hostCounts[group])
	}
	return 0
}

// openInsert adds a claim to the open list and to every eligible list whose limit it meets.
func (r *run) openInsert(c *target) {
	r.open.insert(c)
	c.eligibleIn = 0
	for i, l := range r.eligible {
		if hostCount(c, l.key.group) <= l.key.limit {
			l.claims.insert(c)
			c.eligibleIn |= 1 << i
		}
	}
}

// openRemove takes a claim out of every list; it must be called before the claim's slack changes.
func (r *run) openRemove(c *target) {
	r.open.remove(c)
	for i, l := range r.eligible {
		if c.eligibleIn&(1<<i) != 0 {
			l.claims.remove(c)
		}
	}
	c.eligibleIn = 0
}

// scanList returns the shortest list of open claims that still holds every claim the pod may go to under
// the attempt: the shortest eligible list among its hostname limits, or all open claims. It must mirror
// the hostname checks of allows.
func (r *run) scanList(p *podInfo, att *attempt) *claimList {
	best := &r.open
	use := func(g *group, limit int) {
		if g.key != v1.LabelHostname {
			return
		}
		if l := r.eligibleFor(hostLimit{group: g.id, limit: limit}); l != nil && l.n < best.n {
			best = l
		}
	}
	for _, s := range att.spreads {
		self := 0
		if s.selfMatch {
			self = 1
		}
		use(s.group, s.maxSkew-self)
	}
	for _, a := range att.affinities {
		if a.anti {
			use(a.group, 0)
		}
	}
	for _, g := range p.blockedBy {
		use(g, 0)
	}
	return best
}

// eligibleFor returns the list for a limit, building it from the open claims the first time it is asked
// for, or nil when maxEligibleLists are already kept.
func (r *run) eligibleFor(key hostLimit) *claimList {
	if l, ok := r.eligibleByKey[key]; ok {
		return &l.claims
	}
	if len(r.eligible) >= maxEligibleLists {
		return nil
	}
	l := &eligibleList{key: key, claims: newClaimList(r.claimByID)}
	for _, b := range r.open.blocks {
		for _, k := range b.keys {
			if c := r.claimByID(k.id); hostCount(c, key.group) <= key.limit {
				l.claims.insert(c)
				c.eligibleIn |= 1 << len(r.eligible)
			}
		}
	}
	if r.eligibleByKey == nil {
		r.eligibleByKey = map[hostLimit]*eligibleList{}
	}
	r.eligibleByKey[key] = l
	r.eligible = append(r.eligible, l)
	return &l.claims
}

// claimByID finds an open claim by id: new claims are numbered after the nodes, in the order they join
// r.claims.
func (r *run) claimByID(id int) *target { return r.claims[id-len(r.nodes)] }
