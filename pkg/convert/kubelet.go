package convert

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
)

// moveKubelets puts each pool's kubelet block on the EC2NodeClass it names, as v1 wants it. The class must be
// among the converted documents, and every converted pool that names it must carry the same kubelet block:
// otherwise the pools need a class each (upstream's v1 migration guide asks for the same by hand).
func (c *converter) moveKubelets() {
	byClass := map[string][]*pendingPool{}
	var names []string
	for _, p := range c.pools {
		ref := p.pool.Spec.Template.Spec.NodeClassRef
		if ref == nil || ref.Group != groupAWS || ref.Kind != "EC2NodeClass" {
			if p.kubelet != nil {
				c.fail(p.doc, p.field, "cannot move the kubelet block: the pool's node class is not a karpenter.k8s.aws EC2NodeClass, and only an EC2NodeClass takes it in v1")
			}
			continue
		}
		if _, seen := byClass[ref.Name]; !seen {
			names = append(names, ref.Name)
		}
		byClass[ref.Name] = append(byClass[ref.Name], p)
	}
	sort.Strings(names)
	for _, name := range names {
		c.moveKubelet(name, byClass[name])
	}
}

func (c *converter) moveKubelet(className string, pools []*pendingPool) {
	var with *pendingPool
	for _, p := range pools {
		if p.kubelet != nil {
			with = p
			break
		}
	}
	if with == nil {
		return
	}
	for _, p := range pools {
		if p.kubelet == nil || !equality.Semantic.DeepEqual(p.kubelet, with.kubelet) {
			c.fail(p.doc, p.field, "NodePools %s use EC2NodeClass %q with different kubelet settings; v1 keeps the kubelet block on the EC2NodeClass, so give each pool its own EC2NodeClass (a copy under another name) before converting", poolNames(pools), className)
			return
		}
	}
	class, ok := c.classes[className]
	if !ok && c.v1Classes[className] {
		c.fail(with.doc, with.field, "the kubelet block moves to EC2NodeClass %q in v1, which the input already has as v1: put the block in its spec.kubelet by hand, then drop it here", className)
		return
	}
	if !ok {
		c.fail(with.doc, with.field, "the kubelet block moves to EC2NodeClass %q in v1, which is not among the converted documents: convert it together with this NodePool (another -f)", className)
		return
	}
	class.EC2NodeClass.Spec.Kubelet = with.kubelet
	c.note(with.doc, with.field, "moved to EC2NodeClass %q (spec.kubelet)", className)
}

func poolNames(pools []*pendingPool) string {
	names := make([]string, 0, len(pools))
	for _, p := range pools {
		names = append(names, p.pool.Name)
	}
	return strings.Join(names, ", ")
}
