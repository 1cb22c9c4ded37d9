package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/lathe-autoscaler/lathe/pkg/operator/options"
)

// nominatedNodeNameSince is the first Kubernetes version whose kube-scheduler keeps a status.nominatedNodeName
// set by another component as a hint (KEP-5278, feature gate NominatedNodeNameForExpectation on by default).
var nominatedNodeNameSince = version.MajorMinor(1, 35)

// nominatedNodeNames decides NOMINATED_NODE_NAME: true and false are taken as said; auto asks the API server
// its version.
func nominatedNodeNames(ctx context.Context, deps Deps) (bool, error) {
	switch deps.Options.NominatedNodeName {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	dc, err := discovery.NewDiscoveryClientForConfig(deps.Manager.GetConfig())
	if err != nil {
		return false, fmt.Errorf("building discovery client, %w", err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return false, fmt.Errorf("getting the API server's version, %w", err)
	}
	on := SupportsNominatedNodeName(info.GitVersion)
	log.FromContext(ctx).Info("nominated node names", "serverVersion", info.GitVersion, "enabled", on, "setting", options.NominatedNodeNameAuto)
	return on, nil
}

// SupportsNominatedNodeName reports whether an API server of the given version (v1.35.0, v1.37.2-eks-…) is
// v1.35 or later; an unreadable version counts as not.
func SupportsNominatedNodeName(gitVersion string) bool {
	v, err := version.ParseGeneric(gitVersion)
	return err == nil && v.AtLeast(nominatedNodeNameSince)
}
