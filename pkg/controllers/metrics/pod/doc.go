// Package pod records pod metrics under Karpenter's names: how long each pod took from creation to
// Running (karpenter_pods_startup_duration_seconds), observed once per pod, for pods the controller saw
// pending. Pods already running when it starts (after a restart or a change of leader) are not observed
// again; the memory of pending pods is in this process only.
package pod
