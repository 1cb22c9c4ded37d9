// Package pod records pod metrics under Karpenter's names: how long each pod took from creation to
// Running (karpenter_pods_startup_duration_seconds), observed once per pod.
package pod
