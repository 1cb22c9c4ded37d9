package userdata

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// parseAL2023 reads user data as nodeadm does: the NodeConfig parts of a MIME document (or the whole document
// when it is not MIME), merged in order.
func parseAL2023(doc string) (Node, error) {
	var n Node
	configs := []string{doc}
	if isMIME(doc) {
		parts, err := readParts(doc)
		if err != nil {
			return Node{}, fmt.Errorf("reading AL2023 user data, %w", err)
		}
		configs = nil
		for _, p := range parts {
			switch mediaType(p.ContentType) {
			case contentTypeNodeConfig:
				configs = append(configs, p.Content)
			case "text/x-shellscript":
				n.Scripts = append(n.Scripts, p.Content)
			}
		}
		if len(configs) == 0 {
			return Node{}, fmt.Errorf("reading AL2023 user data, no %s part (nodeadm has no NodeConfig)", contentTypeNodeConfig)
		}
	}
	merged, err := mergeNodeConfigs(configs)
	if err != nil {
		return Node{}, fmt.Errorf("reading AL2023 user data, %w", err)
	}
	if err := merged.validate(); err != nil {
		return Node{}, fmt.Errorf("reading AL2023 user data, %w", err)
	}
	if err := merged.readInto(&n); err != nil {
		return Node{}, fmt.Errorf("reading AL2023 user data, %w", err)
	}
	return n, nil
}

func mergeNodeConfigs(docs []string) (nodeConfig, error) {
	merged := nodeConfig{Spec: nodeConfigSpec{Kubelet: nodeConfigKubelet{Config: map[string]any{}}}}
	for i, doc := range docs {
		var c nodeConfig
		if err := yaml.Unmarshal([]byte(doc), &c); err != nil {
			return nodeConfig{}, fmt.Errorf("NodeConfig %d is not valid YAML, %w", i+1, err)
		}
		if c.APIVersion != nodeConfigAPIVersion || c.Kind != nodeConfigKind {
			return nodeConfig{}, fmt.Errorf("NodeConfig %d is apiVersion %q kind %q, want %s %s", i+1, c.APIVersion, c.Kind, nodeConfigAPIVersion, nodeConfigKind)
		}
		merged.APIVersion, merged.Kind = c.APIVersion, c.Kind
		cluster := &merged.Spec.Cluster
		cluster.Name = orString(c.Spec.Cluster.Name, cluster.Name)
		cluster.APIServerEndpoint = orString(c.Spec.Cluster.APIServerEndpoint, cluster.APIServerEndpoint)
		cluster.CIDR = orString(c.Spec.Cluster.CIDR, cluster.CIDR)
		if len(c.Spec.Cluster.CertificateAuthority) > 0 {
			cluster.CertificateAuthority = c.Spec.Cluster.CertificateAuthority
		}
		mergeMaps(merged.Spec.Kubelet.Config, c.Spec.Kubelet.Config)
		merged.Spec.Kubelet.Flags = append(merged.Spec.Kubelet.Flags, c.Spec.Kubelet.Flags...)
		if c.Spec.Instance != nil {
			merged.Spec.Instance = c.Spec.Instance
		}
	}
	return merged, nil
}

// mergeMaps merges src into dst as nodeadm merges inline kubelet configuration: nested mappings key by key,
// anything else replaced.
func mergeMaps(dst, src map[string]any) {
	for k, v := range src {
		srcMap, srcIsMap := v.(map[string]any)
		dstMap, dstIsMap := dst[k].(map[string]any)
		if srcIsMap && dstIsMap {
			mergeMaps(dstMap, srcMap)
			continue
		}
		dst[k] = v
	}
}

func orString(s, otherwise string) string {
	if s != "" {
		return s
	}
	return otherwise
}

// validate fails as nodeadm's validation does when the cluster details are incomplete.
func (c nodeConfig) validate() error {
	var missing []string
	if c.Spec.Cluster.Name == "" {
		missing = append(missing, "name")
	}
	if c.Spec.Cluster.APIServerEndpoint == "" {
		missing = append(missing, "apiServerEndpoint")
	}
	if len(c.Spec.Cluster.CertificateAuthority) == 0 {
		missing = append(missing, "certificateAuthority")
	}
	if c.Spec.Cluster.CIDR == "" {
		missing = append(missing, "cidr")
	}
	if len(missing) > 0 {
		return fmt.Errorf("NodeConfig has no spec.cluster.%s", strings.Join(missing, ", spec.cluster."))
	}
	return nil
}

// readInto reads the node's view: the inline config first, then the kubelet flags, which the kubelet lets
// override its config file.
func (c nodeConfig) readInto(n *Node) error {
	n.ClusterName = c.Spec.Cluster.Name
	n.InstanceStoreRAID0 = c.Spec.Instance != nil && c.Spec.Instance.LocalStorage.Strategy == "RAID0"
	n.ClusterEndpoint = c.Spec.Cluster.APIServerEndpoint
	n.ClusterCABundle = base64.StdEncoding.EncodeToString(c.Spec.Cluster.CertificateAuthority)
	n.KubeletConfig = c.Spec.Kubelet.Config
	var maxPods *int32
	if err := decodeKey(c.Spec.Kubelet.Config, "maxPods", &maxPods); err != nil {
		return err
	}
	n.MaxPods = maxPods
	if err := decodeKey(c.Spec.Kubelet.Config, "clusterDNS", &n.ClusterDNS); err != nil {
		return err
	}
	if len(n.ClusterDNS) == 0 {
		dns, err := dnsFromCIDR(c.Spec.Cluster.CIDR)
		if err != nil {
			return err
		}
		n.ClusterDNS = []string{dns}
	}
	var taints []corev1.Taint
	if err := decodeKey(c.Spec.Kubelet.Config, "registerWithTaints", &taints); err != nil {
		return err
	}
	for _, t := range taints {
		if _, err := newTaint(t.ToString(), t.Key, t.Value, string(t.Effect)); err != nil {
			return err
		}
	}
	sortTaints(taints)
	n.Taints = taints
	// nodeadm hands the flags to the kubelet's systemd unit, which splits and unquotes them as a shell would.
	var flags []string
	for _, flag := range c.Spec.Kubelet.Flags {
		commands, err := shellCommands(flag)
		if err != nil {
			return fmt.Errorf("reading kubelet flag %q, %w", flag, err)
		}
		for _, words := range commands {
			flags = append(flags, words...)
		}
	}
	return readKubeletArgs(n, flags)
}

// decodeKey decodes config[key], when present, into out.
func decodeKey(config map[string]any, key string, out any) error {
	v, ok := config[key]
	if !ok {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("reading kubelet config %s, %w", key, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("reading kubelet config %s, %w", key, err)
	}
	return nil
}

// dnsFromCIDR is the cluster DNS nodeadm derives from the service CIDR: its tenth address.
func dnsFromCIDR(cidr string) (string, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return "", fmt.Errorf("reading spec.cluster.cidr, %w", err)
	}
	addr := prefix.Masked().Addr()
	for range 10 {
		addr = addr.Next()
	}
	return addr.String(), nil
}
