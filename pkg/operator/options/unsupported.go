package options

import (
	"errors"
	"fmt"
	"strings"
)

// notBuiltGates are the feature gates Lathe refuses to turn on because it does not build the feature yet,
// with what is missing. Karpenter's default for each is off, so an unchanged Helm chart still starts.
// When a feature lands, its gate leaves this list and its controllers read Options.FeatureGates.
var notBuiltGates = map[string]string{
	"NodeOverlay":    "NodeOverlay is not built",
	"CapacityBuffer": "capacity buffers are not built",
}

// unsupported refuses the settings Lathe parses but does not honour yet, when they ask for anything other
// than Karpenter's default (which is what Lathe does). Each message names the setting and the value.
func (o *Options) unsupported() error {
	var errs []error
	refuse := func(setting, value, why string) {
		errs = append(errs, fmt.Errorf("%s=%s is not supported yet: %s; leave it unset or at Karpenter's default", setting, value, why))
	}
	var gates []string
	for _, f := range o.FeatureGates.gateFields() {
		if why, ok := notBuiltGates[f.name]; ok && *f.value {
			gates = append(gates, f.name+"=true ("+why+")")
		}
	}
	if len(gates) > 0 {
		errs = append(errs, fmt.Errorf("FEATURE_GATES: %s not supported yet; leave these gates off", strings.Join(gates, ", ")))
	}
	if o.ReservedENIs != 0 && o.CloudProvider != CloudProviderAWS {
		refuse("RESERVED_ENIS", fmt.Sprint(o.ReservedENIs), "with CLOUD_PROVIDER=sim max pods always come from the instance type's full ENI limit (default 0; the AWS provider honours it)")
	}
	if !o.IgnoreDRARequests {
		refuse("IGNORE_DRA_REQUESTS", "false", "dynamic resource allocation claims are always ignored while scheduling (default true)")
	}
	if o.DisableClusterStateObservability {
		refuse("DISABLE_CLUSTER_STATE_OBSERVABILITY", "true", "the cluster state metrics cannot be turned off (default false)")
	}
	return errors.Join(errs...)
}
