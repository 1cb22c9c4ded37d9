package userdata

import (
	"fmt"

	"github.com/pelletier/go-toml/v2"
	corev1 "k8s.io/api/core/v1"
)

// parseBottlerocket reads settings.kubernetes as Bottlerocket does.
func parseBottlerocket(doc string) (Node, error) {
	var root map[string]any
	if err := toml.Unmarshal([]byte(doc), &root); err != nil {
		return Node{}, fmt.Errorf("reading Bottlerocket user data, not valid TOML, %w", err)
	}
	settings, ok := root["settings"].(map[string]any)
	if !ok {
		return Node{}, fmt.Errorf("reading Bottlerocket user data, no [settings] table")
	}
	k8s, ok := settings["kubernetes"].(map[string]any)
	if !ok {
		return Node{}, fmt.Errorf("reading Bottlerocket user data, no [settings.kubernetes] table")
	}
	n, err := readBottlerocketKubernetes(k8s)
	if err != nil {
		return Node{}, fmt.Errorf("reading Bottlerocket user data, settings.kubernetes.%w", err)
	}
	n.InstanceStoreRAID0 = initsEphemeralStorage(settings["bootstrap-commands"])
	return n, nil
}

// initsEphemeralStorage says whether a bootstrap command runs "apiclient ephemeral-storage init".
func initsEphemeralStorage(bootstrapCommands any) bool {
	commands, _ := bootstrapCommands.(map[string]any)
	for _, command := range commands {
		c, _ := command.(map[string]any)
		lines, _ := c["commands"].([]any)
		for _, line := range lines {
			words, _ := line.([]any)
			if len(words) >= 3 && words[0] == "apiclient" && words[1] == "ephemeral-storage" && words[2] == "init" {
				return true
			}
		}
	}
	return false
}

func readBottlerocketKubernetes(k8s map[string]any) (Node, error) {
	n := Node{KubeletConfig: k8s}
	var err error
	if n.ClusterName, err = stringSetting(k8s, "cluster-name"); err != nil {
		return Node{}, err
	}
	if n.ClusterName == "" {
		return Node{}, fmt.Errorf("cluster-name is not set (the node would not join)")
	}
	if n.ClusterEndpoint, err = stringSetting(k8s, "api-server"); err != nil {
		return Node{}, err
	}
	if n.ClusterCABundle, err = stringSetting(k8s, "cluster-certificate"); err != nil {
		return Node{}, err
	}
	if n.ClusterDNS, err = dnsSetting(k8s); err != nil {
		return Node{}, err
	}
	if v, ok := k8s["max-pods"]; ok {
		maxPods, ok := v.(int64)
		if !ok || maxPods < 0 || maxPods > 1<<31-1 {
			return Node{}, fmt.Errorf("max-pods is %v, not a pod count", v)
		}
		n.MaxPods = ptrInt32(int32(maxPods))
	}
	if n.Labels, err = bottlerocketLabels(k8s); err != nil {
		return Node{}, err
	}
	if n.Taints, err = bottlerocketTaints(k8s); err != nil {
		return Node{}, err
	}
	return n, nil
}

func ptrInt32(v int32) *int32 { return &v }

func stringSetting(m map[string]any, key string) (string, error) {
	v, ok := m[key]
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s is a %T, not a string", key, v)
	}
	return s, nil
}

// dnsSetting reads cluster-dns-ip, a string or a list of strings.
func dnsSetting(k8s map[string]any) ([]string, error) {
	switch v := k8s["cluster-dns-ip"].(type) {
	case nil:
		return nil, nil
	case string:
		return []string{v}, nil
	case []any:
		return stringList("cluster-dns-ip", v)
	default:
		return nil, fmt.Errorf("cluster-dns-ip is a %T, not a string or a list", v)
	}
}

func stringList(key string, list []any) ([]string, error) {
	out := make([]string, 0, len(list))
	for _, item := range list {
		s, ok := item.(string)
		if !ok {
			return nil, fmt.Errorf("%s has a %T, not a string", key, item)
		}
		out = append(out, s)
	}
	return out, nil
}

func bottlerocketLabels(k8s map[string]any) (map[string]string, error) {
	v, ok := k8s["node-labels"]
	if !ok {
		return nil, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("node-labels is a %T, not a table", v)
	}
	labels := map[string]string{}
	for k, value := range t {
		s, ok := value.(string)
		if !ok {
			return nil, fmt.Errorf("node-labels.%q is a %T, not a string", k, value)
		}
		labels[k] = s
	}
	return labels, nil
}

// bottlerocketTaints reads node-taints: key → list of "value:Effect" (or one such string).
func bottlerocketTaints(k8s map[string]any) ([]corev1.Taint, error) {
	v, ok := k8s["node-taints"]
	if !ok {
		return nil, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("node-taints is a %T, not a table", v)
	}
	var taints []corev1.Taint
	for key, value := range t {
		var specs []string
		switch value := value.(type) {
		case string:
			specs = []string{value}
		case []any:
			list, err := stringList("node-taints."+key, value)
			if err != nil {
				return nil, err
			}
			specs = list
		default:
			return nil, fmt.Errorf("node-taints.%q is a %T, not a list", key, value)
		}
		for _, spec := range specs {
			val, effect, found := cutLast(spec, ":")
			if !found {
				return nil, fmt.Errorf("node-taints.%q: %q has no effect", key, spec)
			}
			taint, err := newTaint(key+"="+spec, key, val, effect)
			if err != nil {
				return nil, fmt.Errorf("node-taints: %w", err)
			}
			taints = append(taints, taint)
		}
	}
	sortTaints(taints)
	return taints, nil
}
