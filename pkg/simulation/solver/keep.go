package solver

import "context"

// Keeping earlier places. A pass that plans again pods an earlier pass already placed (Input.EarlierPlaces)
// should move only the pods it must: each move is a nomination and a hint changed while the kube-scheduler
// may be placing the pod. Packing afresh moves nearly all of them, because the first fit of a different
// set of pods fills the nodes differently; and trying each pod's earlier place first is not enough, since a
// pod that finds its place taken then takes the first room it finds, which is another pod's place, and so
// on down the nodes. So a solve with earlier places runs in three rounds, each in the order's sequence:
//  1. pods that need a host of their own (seeds: hostname anti-affinity) go back where they were;
//  2. every other pod with an earlier place goes back there if it still fits, and each seed not placed yet
//     is placed as usual (taking, on a node it joins, the room some earlier pods had);
//  3. the pods left over, new ones and those whose place was taken, are placed as usual.
// A pod that moves never takes the room of a pod not placed yet. Seeds are the reason a pass regroups at all
// (a later group that needs hosts of its own, see provisioning's regroup), so they are the ones placed
// ahead.

// placeKeeping is placeAll for a solve with earlier places.
func (r *run) placeKeeping(ctx context.Context, pods []*podInfo) error {
	placed := make([]bool, len(pods))
	for i, p := range pods {
		if err := checkEvery(ctx, i); err != nil {
			return err
		}
		placed[i] = p.seed && p.invalid == nil && r.placeEarlier(p)
	}
	var later []*podInfo
	for i, p := range pods {
		if err := checkEvery(ctx, i); err != nil {
			return err
		}
		switch {
		case placed[i]:
		case p.invalid != nil:
			r.unplaced = append(r.unplaced, p)
		case p.seed:
			if !r.place(p) {
				r.unplaced = append(r.unplaced, p)
			}
		case !r.placeEarlier(p):
			later = append(later, p)
		}
	}
	for i, p := range later {
		if err := checkEvery(ctx, i); err != nil {
			return err
		}
		if !r.place(p) {
			r.unplaced = append(r.unplaced, p)
		}
	}
	return nil
}

// placeEarlier puts the pod back on its earlier place if that can hold it, under the attempts place would
// try, and reports whether it did.
func (r *run) placeEarlier(p *podInfo) bool {
	if p.earlier == 0 {
		return false
	}
	r.earlierOnly = true
	defer func() { r.earlierOnly = false }()
	return r.place(p)
}

// markEarlierPlaces points each pending pod with an earlier place among the nodes and in-flight claims at it.
func (prep *prepared) markEarlierPlaces(places map[PodRef]string) {
	if len(places) == 0 {
		return
	}
	byName := make(map[string]int, len(prep.nodes))
	for i := len(prep.nodes) - 1; i >= 0; i-- { // nodes come first, so a node wins a shared name
		byName[prep.nodes[i].name] = i
	}
	for _, p := range prep.pods {
		if i, ok := byName[places[p.ref]]; ok {
			p.earlier = i + 1
			prep.keeping = true
		}
	}
}
