package launchtemplate

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/lathe-autoscaler/lathe/pkg/metrics"
)

const (
	// userDataLimit is the most user data EC2 takes in a launch template, counted before base64.
	userDataLimit = 16384
	// userDataWarnAt is where a log line starts warning that the limit is near (nine tenths of it).
	userDataWarnAt = userDataLimit * 9 / 10
	nodeClassLabel = "nodeclass"
)

// NewUserDataBytes creates karpenter_ec2nodeclasses_userdata_bytes on reg (or returns the equal one
// registered there before): the size of the user data last rendered for a template of each EC2NodeClass.
func NewUserDataBytes(reg prometheus.Registerer) *prometheus.GaugeVec {
	return metrics.NewGauge(reg, prometheus.GaugeOpts{
		Namespace: metrics.Namespace, Subsystem: "ec2nodeclasses", Name: "userdata_bytes",
		Help: "Bytes of user data (before base64) in the launch template last created for the EC2NodeClass; EC2 refuses more than 16384.",
	}, nodeClassLabel)
}
