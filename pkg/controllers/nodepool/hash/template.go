package hash

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

// Version is the hash scheme, written to karpenter.sh/nodepool-hash-version. A NodeClaim annotated with
// another version was hashed differently and must not be compared with the pool's hash.
const Version = "v3"

// hashedTemplate is what the hash covers, in a fixed field order. Durations are written in Go's canonical
// form so that equal durations spelt differently ("720h", "43200m") hash alike.
type hashedTemplate struct {
	Labels                 map[string]string      `json:"labels,omitempty"`
	Annotations            map[string]string      `json:"annotations,omitempty"`
	Taints                 []corev1.Taint         `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint         `json:"startupTaints,omitempty"`
	NodeClassRef           *v1.NodeClassReference `json:"nodeClassRef,omitempty"`
	ExpireAfter            string                 `json:"expireAfter"`
	TerminationGracePeriod string                 `json:"terminationGracePeriod,omitempty"`
}

// Template returns the hash of the pool's NodeClaim template, requirements excluded: FNV-64a over the
// template's canonical JSON (encoding/json sorts map keys), as a decimal string.
func Template(np *v1.NodePool) (string, error) {
	tmpl := np.Spec.Template
	in := hashedTemplate{
		Labels:        tmpl.Labels,
		Annotations:   tmpl.Annotations,
		Taints:        tmpl.Spec.Taints,
		StartupTaints: tmpl.Spec.StartupTaints,
		NodeClassRef:  tmpl.Spec.NodeClassRef,
		ExpireAfter:   tmpl.Spec.ExpireAfter.String(),
	}
	if tgp := tmpl.Spec.TerminationGracePeriod; tgp != nil {
		in.TerminationGracePeriod = tgp.Duration.String()
	}
	b, err := json.Marshal(in)
	if err != nil {
		return "", fmt.Errorf("encoding nodepool template, %w", err)
	}
	h := fnv.New64a()
	_, _ = h.Write(b) // hash.Hash never returns an error
	return strconv.FormatUint(h.Sum64(), 10), nil
}
