package sim

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	v1 "github.com/lathe-autoscaler/lathe/pkg/apis/v1"
)

const ec2NodeClassKind = "EC2NodeClass"

// Simulated resources every EC2NodeClass resolves to.
const (
	SecurityGroupID    = "sg-00000000000000001"
	securityGroupName  = "lathe-sim"
	instanceProfileFmt = "lathe-sim_%s"
)

// simulatedAMIs is the image per architecture: one fake AL2023 image each.
func simulatedAMIs() map[string]string {
	return map[string]string{"amd64": "ami-0000000000000a640", "arm64": "ami-0000000000000a641"}
}

func objectKey(name string) client.ObjectKey { return client.ObjectKey{Name: name} }

// NodeClassDeps are the node class controller's dependencies.
type NodeClassDeps struct {
	// Client reads and patches EC2NodeClasses. Required.
	Client client.Client
	// Clock stamps condition transitions. Default the real clock.
	Clock clock.Clock
	// Region the subnets are in. Default us-east-1.
	Region string
	// Zones to create one simulated subnet in each. Default <region>a, b and c.
	Zones []string
}

// NodeClassController resolves every EC2NodeClass against the simulated cloud and sets it Ready.
type NodeClassController struct {
	client  client.Client
	clock   clock.Clock
	zones   []string
	zoneIDs map[string]string
}

// NewNodeClassController returns the simulation's EC2NodeClass status controller.
func NewNodeClassController(deps NodeClassDeps) *NodeClassController {
	if deps.Clock == nil {
		deps.Clock = clock.RealClock{}
	}
	if deps.Region == "" {
		deps.Region = DefaultRegion
	}
	if len(deps.Zones) == 0 {
		deps.Zones = defaultZones(deps.Region)
	}
	return &NodeClassController{client: deps.Client, clock: deps.Clock, zones: deps.Zones, zoneIDs: zoneIDs(deps.Region, deps.Zones)}
}

// Name is "nodeclass.sim".
func (c *NodeClassController) Name() string { return "nodeclass.sim" }

// Register watches EC2NodeClasses.
func (c *NodeClassController) Register(_ context.Context, mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).Named(c.Name()).For(&awsv1.EC2NodeClass{}).Complete(c)
}

// Reconcile writes the simulated resolution into the node class's status when it differs.
func (c *NodeClassController) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nodeClass := &awsv1.EC2NodeClass{}
	if err := c.client.Get(ctx, req.NamespacedName, nodeClass); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("EC2NodeClass", klog.KObj(nodeClass)))
	if !nodeClass.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	stored := nodeClass.DeepCopy()
	c.resolve(nodeClass)
	if equality.Semantic.DeepEqual(stored.Status, nodeClass.Status) {
		return reconcile.Result{}, nil
	}
	if err := c.client.Status().Patch(ctx, nodeClass, client.MergeFromWithOptions(stored, client.MergeFromWithOptimisticLock{})); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(fmt.Errorf("patching ec2nodeclass status, %w", err))
	}
	log.FromContext(ctx).V(1).Info("resolved simulated nodeclass")
	return reconcile.Result{}, nil
}

// resolve fills the status with the simulated subnets, security group, images and instance profile, and
// sets every condition True.
func (c *NodeClassController) resolve(nodeClass *awsv1.EC2NodeClass) {
	nodeClass.Status.Subnets = nil
	for i, zone := range c.zones {
		nodeClass.Status.Subnets = append(nodeClass.Status.Subnets, awsv1.Subnet{
			ID: "subnet-" + fmt.Sprintf("%017x", i+1), Zone: zone, ZoneID: c.zoneIDs[zone],
		})
	}
	nodeClass.Status.SecurityGroups = []awsv1.SecurityGroup{{ID: SecurityGroupID, Name: securityGroupName}}
	amis := simulatedAMIs()
	nodeClass.Status.AMIs = []awsv1.AMI{
		simulatedAMI(amis["amd64"], "lathe-sim-al2023-x86_64", "amd64"),
		simulatedAMI(amis["arm64"], "lathe-sim-al2023-arm64", "arm64"),
	}
	if nodeClass.Spec.InstanceProfile != nil {
		nodeClass.Status.InstanceProfile = *nodeClass.Spec.InstanceProfile
	} else {
		nodeClass.Status.InstanceProfile = fmt.Sprintf(instanceProfileFmt, nodeClass.Spec.Role)
	}
	for _, cond := range []struct{ kind, message string }{
		{awsv1.ConditionTypeSubnetsReady, "Resolved " + strconv.Itoa(len(c.zones)) + " simulated subnets"},
		{awsv1.ConditionTypeSecurityGroupsReady, "Resolved the simulated security group"},
		{awsv1.ConditionTypeAMIsReady, "Resolved one simulated AMI per architecture"},
		{awsv1.ConditionTypeInstanceProfileReady, "Instance profile " + nodeClass.Status.InstanceProfile + " is simulated"},
		{awsv1.ConditionTypeValidationSucceeded, "The simulation accepts every node class"},
		{awsv1.ConditionTypeReady, "Every simulated resource resolved"},
	} {
		meta.SetStatusCondition(&nodeClass.Status.Conditions, metav1.Condition{
			Type:               cond.kind,
			Status:             metav1.ConditionTrue,
			Reason:             cond.kind,
			Message:            cond.message,
			ObservedGeneration: nodeClass.Generation,
			LastTransitionTime: metav1.NewTime(c.clock.Now()),
		})
	}
}

func simulatedAMI(id, name, arch string) awsv1.AMI {
	return awsv1.AMI{ID: id, Name: name, Requirements: []corev1.NodeSelectorRequirement{
		{Key: v1.LabelArch, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}},
	}}
}
