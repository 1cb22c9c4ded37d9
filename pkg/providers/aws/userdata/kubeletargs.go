package userdata

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// kubeletArgs are the kubelet flags AL2 and Windows pass through their bootstrap script, in upstream's order
// (maps sorted).
func (o Options) kubeletArgs() []string {
	var args []string
	if labels := o.labels(); len(labels) > 0 {
		args = append(args, fmt.Sprintf("--node-labels=%q", joinLabels(labels)))
	}
	args = append(args, fmt.Sprintf("--register-with-taints=%q", joinTaints(o.taints())))
	if maxPods := o.maxPods(); maxPods != nil {
		args = append(args, fmt.Sprintf("--max-pods=%d", *maxPods))
	}
	k := o.Kubelet
	if k == nil {
		return args
	}
	if k.PodsPerCore != nil {
		args = append(args, fmt.Sprintf("--pods-per-core=%d", *k.PodsPerCore))
	}
	args = appendMapArg(args, "--system-reserved", k.SystemReserved, "=")
	args = appendMapArg(args, "--kube-reserved", k.KubeReserved, "=")
	args = appendMapArg(args, "--eviction-hard", k.EvictionHard, "<")
	args = appendMapArg(args, "--eviction-soft", k.EvictionSoft, "<")
	grace := map[string]string{}
	for signal, d := range k.EvictionSoftGracePeriod {
		grace[signal] = d.Duration.String()
	}
	args = appendMapArg(args, "--eviction-soft-grace-period", grace, "=")
	if k.EvictionMaxPodGracePeriod != nil {
		args = append(args, fmt.Sprintf("--eviction-max-pod-grace-period=%d", *k.EvictionMaxPodGracePeriod))
	}
	if k.ImageGCHighThresholdPercent != nil {
		args = append(args, fmt.Sprintf("--image-gc-high-threshold=%d", *k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		args = append(args, fmt.Sprintf("--image-gc-low-threshold=%d", *k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		args = append(args, fmt.Sprintf("--cpu-cfs-quota=%t", *k.CPUCFSQuota))
	}
	return args
}

func appendMapArg(args []string, name string, m map[string]string, sep string) []string {
	if len(m) == 0 {
		return args
	}
	pairs := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		pairs = append(pairs, k+sep+m[k])
	}
	return append(args, fmt.Sprintf("%s=%q", name, strings.Join(pairs, ",")))
}

func joinLabels(labels map[string]string) string {
	pairs := make([]string, 0, len(labels))
	for _, k := range sortedKeys(labels) {
		pairs = append(pairs, k+"="+labels[k])
	}
	return strings.Join(pairs, ",")
}

func joinTaints(taints []corev1.Taint) string {
	out := make([]string, 0, len(taints))
	for _, t := range taints {
		out = append(out, t.ToString())
	}
	return strings.Join(out, ",")
}

// readKubeletArgs reads labels, taints and max pods from kubelet flags into n the way the kubelet would
// (repeated --node-labels accumulate; a later --register-with-taints or --max-pods replaces an earlier one);
// the other flags are kept in n.KubeletArgs.
func readKubeletArgs(n *Node, args []string) error {
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(args[i], "=")
		if !hasValue && isValueFlag(name) && i+1 < len(args) {
			i++
			value, hasValue = args[i], true
		}
		switch name {
		case "--node-labels":
			labels, err := parseLabels(value)
			if err != nil {
				return err
			}
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			for k, v := range labels {
				n.Labels[k] = v
			}
		case "--register-with-taints":
			taints, err := parseTaints(value)
			if err != nil {
				return err
			}
			n.Taints = taints
		case "--max-pods":
			maxPods, err := parseInt32(value)
			if err != nil {
				return fmt.Errorf("reading kubelet flag --max-pods, %w", err)
			}
			n.MaxPods = &maxPods
		default:
			if hasValue {
				n.KubeletArgs = append(n.KubeletArgs, name+"="+value)
			} else {
				n.KubeletArgs = append(n.KubeletArgs, name)
			}
		}
	}
	return nil
}

func isValueFlag(name string) bool {
	return name == "--node-labels" || name == "--register-with-taints" || name == "--max-pods"
}

func parseInt32(s string) (int32, error) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%q is not a 32-bit integer", s)
	}
	return int32(v), nil
}

// parseLabels reads "k=v,k2=v2".
func parseLabels(s string) (map[string]string, error) {
	labels := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("reading node labels, %q is not key=value", pair)
		}
		labels[k] = v
	}
	return labels, nil
}

// parseTaints reads "k=v:Effect,k2:Effect" and returns the taints sorted.
func parseTaints(s string) ([]corev1.Taint, error) {
	var taints []corev1.Taint
	for _, spec := range strings.Split(s, ",") {
		if strings.TrimSpace(spec) == "" {
			continue
		}
		t, err := parseTaint(spec)
		if err != nil {
			return nil, err
		}
		taints = append(taints, t)
	}
	sortTaints(taints)
	return taints, nil
}

func parseTaint(spec string) (corev1.Taint, error) {
	keyValue, effect, ok := cutLast(spec, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("reading taint %q, no effect", spec)
	}
	key, value, _ := strings.Cut(keyValue, "=")
	return newTaint(spec, key, value, effect)
}

func newTaint(spec, key, value, effect string) (corev1.Taint, error) {
	if key == "" {
		return corev1.Taint{}, fmt.Errorf("reading taint %q, empty key", spec)
	}
	switch e := corev1.TaintEffect(effect); e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return corev1.Taint{Key: key, Value: value, Effect: e}, nil
	}
	return corev1.Taint{}, fmt.Errorf("reading taint %q, unknown effect %q", spec, effect)
}

func cutLast(s, sep string) (before, after string, found bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}
