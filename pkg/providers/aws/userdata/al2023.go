package userdata

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"
)

const (
	nodeConfigAPIVersion = "node.eks.aws/v1alpha1"
	nodeConfigKind       = "NodeConfig"
)

// nodeConfig is the part of nodeadm's NodeConfig Lathe writes and reads.
type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster  nodeConfigCluster   `json:"cluster"`
	Kubelet  nodeConfigKubelet   `json:"kubelet"`
	Instance *nodeConfigInstance `json:"instance,omitempty"`
}

type nodeConfigCluster struct {
	Name              string `json:"name,omitempty"`
	APIServerEndpoint string `json:"apiServerEndpoint,omitempty"`
	// CertificateAuthority is the PEM bundle; JSON and YAML carry it base64-encoded.
	CertificateAuthority []byte `json:"certificateAuthority,omitempty"`
	CIDR                 string `json:"cidr,omitempty"`
}

type nodeConfigKubelet struct {
	Config map[string]any `json:"config,omitempty"`
	Flags  []string       `json:"flags,omitempty"`
}

type nodeConfigInstance struct {
	LocalStorage nodeConfigLocalStorage `json:"localStorage"`
}

type nodeConfigLocalStorage struct {
	Strategy string `json:"strategy,omitempty"`
}

func renderAL2023(o Options) (string, error) {
	config, err := o.nodeConfig()
	if err != nil {
		return "", err
	}
	configYAML, err := yaml.Marshal(config)
	if err != nil {
		return "", fmt.Errorf("writing the NodeConfig, %w", err)
	}
	parts, err := customPartsAL2023(derefString(o.CustomUserData))
	if err != nil {
		return "", fmt.Errorf("merging the node class's userData, %w", err)
	}
	parts = append(parts, part{ContentType: contentTypeNodeConfig, Content: "# Lathe generated NodeConfig\n" + string(configYAML)})
	return writeParts(parts)
}

func (o Options) nodeConfig() (nodeConfig, error) {
	if o.ClusterCIDR == "" {
		return nodeConfig{}, fmt.Errorf("writing the NodeConfig, the cluster's service CIDR is unknown")
	}
	config := nodeConfig{APIVersion: nodeConfigAPIVersion, Kind: nodeConfigKind, Spec: nodeConfigSpec{
		Cluster: nodeConfigCluster{Name: o.ClusterName, APIServerEndpoint: o.ClusterEndpoint, CIDR: o.ClusterCIDR},
	}}
	if o.ClusterCABundle != "" {
		ca, err := base64.StdEncoding.DecodeString(o.ClusterCABundle)
		if err != nil {
			return nodeConfig{}, fmt.Errorf("decoding the cluster CA bundle, %w", err)
		}
		config.Spec.Cluster.CertificateAuthority = ca
	}
	if o.raid0() {
		config.Spec.Instance = &nodeConfigInstance{LocalStorage: nodeConfigLocalStorage{Strategy: "RAID0"}}
	}
	kubelet, err := o.inlineKubeletConfig()
	if err != nil {
		return nodeConfig{}, err
	}
	config.Spec.Kubelet.Config = kubelet
	if labels := o.labels(); len(labels) > 0 {
		config.Spec.Kubelet.Flags = []string{fmt.Sprintf("--node-labels=%q", joinLabels(labels))}
	}
	return config, nil
}

// inlineKubeletConfig is the node class's kubelet settings under their kubelet configuration names, plus
// maxPods, clusterDNS and registerWithTaints.
func (o Options) inlineKubeletConfig() (map[string]any, error) {
	config := map[string]any{}
	if o.Kubelet != nil {
		raw, err := json.Marshal(o.Kubelet)
		if err != nil {
			return nil, fmt.Errorf("writing the kubelet configuration, %w", err)
		}
		if err := json.Unmarshal(raw, &config); err != nil {
			return nil, fmt.Errorf("writing the kubelet configuration, %w", err)
		}
	}
	if maxPods := o.maxPods(); maxPods != nil {
		config["maxPods"] = *maxPods
	}
	if dns := o.clusterDNS(); len(dns) > 0 {
		config["clusterDNS"] = dns
	}
	config["registerWithTaints"] = o.taints()
	return config, nil
}

// customPartsAL2023 turns the node class's userData into MIME parts as upstream does: a MIME document gives
// its parts, a YAML mapping is a NodeConfig, anything else a shell script.
func customPartsAL2023(userData string) ([]part, error) {
	if userData == "" {
		return nil, nil
	}
	if isMIME(userData) {
		return readParts(userData)
	}
	if err := yaml.Unmarshal([]byte(userData), &map[string]any{}); err == nil {
		return []part{{ContentType: contentTypeNodeConfig, Content: userData}}, nil
	}
	return []part{{ContentType: contentTypeShell, Content: userData}}, nil
}
