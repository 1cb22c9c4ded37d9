package userdata

import (
	"fmt"
	"strconv"

	"github.com/pelletier/go-toml/v2"
)

func renderBottlerocket(o Options) (string, error) {
	doc := map[string]any{}
	if err := toml.Unmarshal([]byte(derefString(o.CustomUserData)), &doc); err != nil {
		return "", fmt.Errorf("merging the node class's userData, it is not valid TOML, %w", err)
	}
	settings, err := table(doc, "settings")
	if err != nil {
		return "", fmt.Errorf("merging the node class's userData, %w", err)
	}
	k8s, err := table(settings, "kubernetes")
	if err != nil {
		return "", fmt.Errorf("merging the node class's userData, settings.%w", err)
	}
	if err := o.setBottlerocketKubernetes(k8s); err != nil {
		return "", fmt.Errorf("merging the node class's userData, %w", err)
	}
	if o.raid0() {
		commands, err := table(settings, "bootstrap-commands")
		if err != nil {
			return "", fmt.Errorf("merging the node class's userData, settings.%w", err)
		}
		commands["000-mount-instance-storage"] = map[string]any{
			"commands": [][]string{
				{"apiclient", "ephemeral-storage", "init"},
				{"apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"},
			},
			"mode":      "always",
			"essential": true,
		}
	}
	out, err := toml.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("writing Bottlerocket settings, %w", err)
	}
	return string(out), nil
}

// bottlerocketKubernetesKeys are the settings.kubernetes keys Bottlerocket knows (and upstream keeps).
var bottlerocketKubernetesKeys = map[string]bool{
	"api-server": true, "cloud-provider": true, "cluster-certificate": true, "cluster-name": true,
	"cluster-dns-ip": true, "credential-providers": true, "node-labels": true, "node-taints": true,
	"max-pods": true, "static-pods": true, "eviction-hard": true, "eviction-soft": true,
	"eviction-soft-grace-period": true, "eviction-max-pod-grace-period": true, "kube-reserved": true,
	"system-reserved": true, "allowed-unsafe-sysctls": true, "server-tls-bootstrap": true, "registry-qps": true,
	"registry-burst": true, "event-qps": true, "event-burst": true, "kube-api-qps": true, "kube-api-burst": true,
	"container-log-max-size": true, "container-log-max-files": true, "cpu-manager-policy": true,
	"cpu-manager-policy-options": true, "cpu-manager-reconcile-period": true, "memory-manager-policy": true,
	"memory-manager-reserved-memory": true, "topology-manager-scope": true, "topology-manager-policy": true,
	"topology-manager-policy-options": true, "image-gc-high-threshold-percent": true,
	"image-gc-low-threshold-percent": true, "ids-per-pod": true, "cpu-cfs-quota-enforced": true,
	"shutdown-grace-period": true, "shutdown-grace-period-for-critical-pods": true, "cluster-domain": true,
	"seccomp-default": true, "pod-pids-limit": true, "device-ownership-from-security-context": true,
	"single-process-oom-kill": true, "container-log-max-workers": true, "container-log-monitor-interval": true,
	"hostname-override-source": true, "log-level": true,
}

// setBottlerocketKubernetes writes Lathe's settings over the user's settings.kubernetes, dropping keys
// Bottlerocket does not know (as upstream does, so that the node still boots).
func (o Options) setBottlerocketKubernetes(k8s map[string]any) error {
	for key := range k8s {
		if !bottlerocketKubernetesKeys[key] {
			delete(k8s, key)
		}
	}
	k8s["cluster-name"] = o.ClusterName
	k8s["api-server"] = o.ClusterEndpoint
	delete(k8s, "cluster-certificate")
	if o.ClusterCABundle != "" {
		k8s["cluster-certificate"] = o.ClusterCABundle
	}
	labels, err := table(k8s, "node-labels")
	if err != nil {
		return fmt.Errorf("settings.kubernetes.%w", err)
	}
	for k, v := range o.labels() {
		labels[k] = v
	}
	if len(labels) == 0 {
		delete(k8s, "node-labels")
	}
	taints := map[string]any{}
	for _, t := range o.taints() {
		list, _ := taints[t.Key].([]string)
		taints[t.Key] = append(list, t.Value+":"+string(t.Effect))
	}
	k8s["node-taints"] = taints
	if maxPods := o.maxPods(); maxPods != nil {
		k8s["max-pods"] = int64(*maxPods)
	}
	if dns := o.clusterDNS(); len(dns) > 0 {
		k8s["cluster-dns-ip"] = dns[0]
	}
	o.setBottlerocketKubelet(k8s)
	return nil
}

func (o Options) setBottlerocketKubelet(k8s map[string]any) {
	k := o.Kubelet
	if k == nil {
		return
	}
	setMap := func(key string, m map[string]string) {
		if m != nil {
			k8s[key] = m
		}
	}
	setMap("system-reserved", k.SystemReserved)
	setMap("kube-reserved", k.KubeReserved)
	setMap("eviction-hard", k.EvictionHard)
	setMap("eviction-soft", k.EvictionSoft)
	if k.EvictionSoftGracePeriod != nil {
		grace := map[string]string{}
		for signal, d := range k.EvictionSoftGracePeriod {
			grace[signal] = d.Duration.String()
		}
		k8s["eviction-soft-grace-period"] = grace
	}
	if k.EvictionMaxPodGracePeriod != nil {
		k8s["eviction-max-pod-grace-period"] = int64(*k.EvictionMaxPodGracePeriod)
	}
	if k.ImageGCHighThresholdPercent != nil {
		k8s["image-gc-high-threshold-percent"] = strconv.Itoa(int(*k.ImageGCHighThresholdPercent))
	}
	if k.ImageGCLowThresholdPercent != nil {
		k8s["image-gc-low-threshold-percent"] = strconv.Itoa(int(*k.ImageGCLowThresholdPercent))
	}
	if k.CPUCFSQuota != nil {
		k8s["cpu-cfs-quota-enforced"] = *k.CPUCFSQuota
	}
}

// table is m[key] as a TOML table, created when absent.
func table(m map[string]any, key string) (map[string]any, error) {
	v, ok := m[key]
	if !ok {
		t := map[string]any{}
		m[key] = t
		return t, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is a %T, not a table", key, v)
	}
	return t, nil
}
