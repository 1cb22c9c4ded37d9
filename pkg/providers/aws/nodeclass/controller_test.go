package nodeclass_test

import (
	"context"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/fakeaws"
	"github.com/lathe-autoscaler/lathe/pkg/providers/aws/nodeclass"
)

var _ = Describe("EC2NodeClass resolution", func() {
	var f *fixture
	BeforeEach(func() { f = newFixture() })

	It("makes the tutorial's EC2NodeClass Ready with its subnets, security group, images and instance profile", func(ctx SpecContext) {
		create(ctx, tutorialClass("tutorial"))
		result, nc := f.reconcile(ctx, "tutorial")

		Expect(nc.Finalizers).To(ContainElement(nodeclass.TerminationFinalizer))
		Expect(nc.Status.Subnets).To(ConsistOf(
			awsv1.Subnet{ID: f.network.SubnetIDs[0], Zone: "us-east-1a", ZoneID: "use1-az1"},
			awsv1.Subnet{ID: f.network.SubnetIDs[1], Zone: "us-east-1b", ZoneID: "use1-az2"},
			awsv1.Subnet{ID: f.network.SubnetIDs[2], Zone: "us-east-1c", ZoneID: "use1-az3"},
		))
		Expect(nc.Status.SecurityGroups).To(Equal([]awsv1.SecurityGroup{{ID: f.network.SecurityGroupID, Name: "eks-cluster-sg-demo"}}))

		// One image per architecture and accelerator variant, the recommended release for Kubernetes 1.37.
		names := map[string]awsv1.AMI{}
		for _, a := range nc.Status.AMIs {
			names[a.Name] = a
		}
		Expect(names).To(HaveLen(5))
		std := names["amazon-eks-node-al2023-x86_64-standard-1.37-v20251120"]
		Expect(std.Requirements).To(Equal([]corev1.NodeSelectorRequirement{
			{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
			{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
			{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		}))
		Expect(names["amazon-eks-node-al2023-arm64-nvidia-1.37-v20251120"].Requirements).To(ConsistOf(
			corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}},
			corev1.NodeSelectorRequirement{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists},
		))
		Expect(names).To(HaveKey("amazon-eks-node-al2023-x86_64-neuron-1.37-v20251120"))

		// The instance profile: upstream's name and path, the cluster's tags, holding the role.
		Expect(nc.Status.InstanceProfile).To(MatchRegexp(`^demo_\d+$`))
		profiles := f.aws.InstanceProfiles()
		Expect(profiles).To(HaveLen(1))
		Expect(profiles[0].Name).To(Equal(nc.Status.InstanceProfile))
		Expect(profiles[0].Path).To(Equal("/karpenter/us-east-1/demo/" + string(nc.UID) + "/"))
		Expect(profiles[0].Roles).To(Equal([]string{"KarpenterNodeRole-demo"}))
		Expect(profiles[0].Tags).To(Equal(map[string]string{
			"kubernetes.io/cluster/demo": "owned", "eks:eks-cluster-name": "demo",
			awsv1.LabelNodeClass: "tutorial", "topology.kubernetes.io/region": "us-east-1",
		}))

		for _, t := range []string{awsv1.ConditionTypeSubnetsReady, awsv1.ConditionTypeSecurityGroupsReady, awsv1.ConditionTypeAMIsReady,
			awsv1.ConditionTypeInstanceProfileReady, awsv1.ConditionTypeCapacityReservationsReady, awsv1.ConditionTypeValidationSucceeded, awsv1.ConditionTypeReady} {
			Expect(condition(nc, t).Status).To(Equal(metav1.ConditionTrue), t)
		}
		Expect(result.RequeueAfter).To(Equal(time.Minute), "subnets are looked at again every minute")

		// A second pass keeps the same profile.
		_, again := f.reconcile(ctx, "tutorial")
		Expect(again.Status.InstanceProfile).To(Equal(nc.Status.InstanceProfile))
		Expect(f.aws.InstanceProfiles()).To(HaveLen(1))
	})

	It("says which selector matched no subnet, and is not Ready", func(ctx SpecContext) {
		nc := tutorialClass("nosubnets")
		nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "prod"}}, {ID: "subnet-0000000000000dead"}}
		create(ctx, nc)
		result, stored := f.reconcile(ctx, "nosubnets")

		subnets := condition(stored, awsv1.ConditionTypeSubnetsReady)
		Expect(subnets.Status).To(Equal(metav1.ConditionFalse))
		Expect(subnets.Reason).To(Equal("SubnetsNotFound"))
		Expect(subnets.Message).To(Equal("SubnetSelector did not match any Subnets: no subnet matches tags karpenter.sh/discovery=prod or id subnet-0000000000000dead"))
		Expect(stored.Status.Subnets).To(BeEmpty())
		Expect(condition(stored, awsv1.ConditionTypeValidationSucceeded).Reason).To(Equal("DependenciesNotReady"))
		ready := condition(stored, awsv1.ConditionTypeReady)
		Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		Expect(ready.Message).To(ContainSubstring("SubnetsReady=False"))
		Expect(ready.Message).To(ContainSubstring("no subnet matches tags karpenter.sh/discovery=prod"))
		Expect(result.RequeueAfter).To(Equal(time.Minute))

		// Tagging a subnet makes it Ready once the one-minute cache has expired.
		f.aws.SetSubnetTags(f.network.SubnetIDs[0], map[string]string{"karpenter.sh/discovery": "prod"})
		f.clock.Step(time.Minute)
		_, stored = f.reconcile(ctx, "nosubnets")
		Expect(stored.Status.Subnets).To(HaveLen(1))
		Expect(condition(stored, awsv1.ConditionTypeReady).Status).To(Equal(metav1.ConditionTrue))
	})

	It("names the security group selector that matched nothing", func(ctx SpecContext) {
		nc := tutorialClass("nogroups")
		nc.Spec.SecurityGroupSelectorTerms = []awsv1.SecurityGroupSelectorTerm{{Name: "web"}}
		create(ctx, nc)
		_, stored := f.reconcile(ctx, "nogroups")
		sg := condition(stored, awsv1.ConditionTypeSecurityGroupsReady)
		Expect(sg.Status).To(Equal(metav1.ConditionFalse))
		Expect(sg.Message).To(HaveSuffix("no security group matches name web"))
		Expect(condition(stored, awsv1.ConditionTypeReady).Status).To(Equal(metav1.ConditionFalse))
	})

	It("picks the newest non-deprecated image per architecture", func(ctx SpecContext) {
		day := func(m, d int) time.Time { return time.Date(2026, time.Month(m), d, 0, 0, 0, 0, time.UTC) }
		deprecated := day(11, 1)
		tags := map[string]string{"team": "a"}
		f.aws.AddImage(fakeaws.Image{Name: "team-x86-old", CreationDate: day(1, 1), Tags: tags})
		f.aws.AddImage(fakeaws.Image{Name: "team-x86-new", CreationDate: day(6, 1), Tags: tags})
		f.aws.AddImage(fakeaws.Image{Name: "team-x86-newest-deprecated", CreationDate: day(9, 1), DeprecationTime: &deprecated, Tags: tags})
		f.aws.AddImage(fakeaws.Image{Name: "team-arm-deprecated", Architecture: "arm64", CreationDate: day(2, 1), DeprecationTime: &deprecated, Tags: tags})
		nc := tutorialClass("tagged")
		nc.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyAL2023)
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Tags: tags}}
		create(ctx, nc)
		_, stored := f.reconcile(ctx, "tagged")
		Expect(stored.Status.AMIs).To(HaveLen(2))
		Expect(stored.Status.AMIs[0].Name).To(Equal("team-x86-new"), "newest first, and not the deprecated one")
		Expect(stored.Status.AMIs[0].Deprecated).To(BeFalse())
		Expect(stored.Status.AMIs[1].Name).To(Equal("team-arm-deprecated"), "a deprecated image serves when nothing else does")
		Expect(stored.Status.AMIs[1].Deprecated).To(BeTrue())
		Expect(stored.Status.AMIs[1].Requirements).To(Equal([]corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"arm64"}}}))
	})

	DescribeTable("resolves aliases through the public SSM parameters",
		func(ctx SpecContext, alias string, want []image) {
			nc := tutorialClass("alias")
			nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: alias}}
			create(ctx, nc)
			_, stored := f.reconcile(ctx, "alias")
			Expect(condition(stored, awsv1.ConditionTypeAMIsReady).Status).To(Equal(metav1.ConditionTrue))
			got := map[string][]corev1.NodeSelectorRequirement{}
			for _, a := range stored.Status.AMIs {
				got[a.Name+"|"+requirementsKey(a.Requirements)] = a.Requirements
			}
			for _, w := range want {
				Expect(got).To(HaveKey(w.name + "|" + requirementsKey(w.reqs)))
			}
			Expect(got).To(HaveLen(len(want)))
		},
		Entry("a pinned AL2023 release", "al2023@v20250301", []image{
			{"amazon-eks-node-al2023-x86_64-standard-1.37-v20250301", standard("amd64")},
			{"amazon-eks-node-al2023-x86_64-nvidia-1.37-v20250301", gpu("amd64")},
			{"amazon-eks-node-al2023-x86_64-neuron-1.37-v20250301", neuron("amd64")},
			{"amazon-eks-node-al2023-arm64-standard-1.37-v20250301", standard("arm64")},
			{"amazon-eks-node-al2023-arm64-nvidia-1.37-v20250301", gpu("arm64")},
		}),
		Entry("Bottlerocket latest: the x86_64 image serves standard and neuron instances", "bottlerocket@latest", []image{
			{"bottlerocket-aws-k8s-1.37-x86_64-v1.50.0", standard("amd64")},
			{"bottlerocket-aws-k8s-1.37-x86_64-v1.50.0", neuron("amd64")},
			{"bottlerocket-aws-k8s-1.37-arm64-v1.50.0", standard("arm64")},
			{"bottlerocket-aws-k8s-1.37-nvidia-x86_64-v1.50.0", gpu("amd64")},
			{"bottlerocket-aws-k8s-1.37-nvidia-arm64-v1.50.0", gpu("arm64")},
		}),
		Entry("a pinned Bottlerocket release with a v", "bottlerocket@v1.20.4", []image{
			{"bottlerocket-aws-k8s-1.37-x86_64-v1.20.4", standard("amd64")},
			{"bottlerocket-aws-k8s-1.37-x86_64-v1.20.4", neuron("amd64")},
			{"bottlerocket-aws-k8s-1.37-arm64-v1.20.4", standard("arm64")},
			{"bottlerocket-aws-k8s-1.37-nvidia-x86_64-v1.20.4", gpu("amd64")},
			{"bottlerocket-aws-k8s-1.37-nvidia-arm64-v1.20.4", gpu("arm64")},
		}),
		Entry("Windows 2022", "windows2022@latest", []image{
			{"Windows_Server-2022-English-Core-EKS_Optimized-1.37-2025.11.12", []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"windows"}},
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}},
				{Key: corev1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{"10.0.20348"}},
			}},
		}),
	)

	It("marks a pinned release past its deprecation as deprecated, and refuses AL2 on Kubernetes 1.33+", func(ctx SpecContext) {
		nc := tutorialClass("old")
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v20240807"}}
		create(ctx, nc)
		_, stored := f.reconcile(ctx, "old")
		Expect(stored.Status.AMIs).To(HaveLen(5))
		for _, a := range stored.Status.AMIs {
			Expect(a.Deprecated).To(BeTrue(), a.Name)
		}

		al2 := tutorialClass("al2")
		al2.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2@latest"}}
		create(ctx, al2)
		_, stored = f.reconcile(ctx, "al2")
		amis := condition(stored, awsv1.ConditionTypeAMIsReady)
		Expect(amis.Status).To(Equal(metav1.ConditionFalse))
		Expect(amis.Reason).To(Equal("UnsupportedAlias"))
		Expect(amis.Message).To(ContainSubstring("AL2 aliases are no longer supported on EKS 1.33+"))

		missing := tutorialClass("missing")
		missing.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{Alias: "al2023@v20990101"}}
		create(ctx, missing)
		_, stored = f.reconcile(ctx, "missing")
		amis = condition(stored, awsv1.ConditionTypeAMIsReady)
		Expect(amis.Reason).To(Equal("AMINotFound"))
		Expect(amis.Message).To(Equal("AMISelector did not match any AMIs: no SSM parameter of alias al2023@v20990101 exists for Kubernetes 1.37"))
	})

	It("resolves images by id, by name and owner, and through a custom SSM parameter", func(ctx SpecContext) {
		// A parameter outside /aws/service/ needs ssm:GetParameter beyond Karpenter's policy, as in Karpenter.
		f = newFixture(true)
		byID := f.aws.AddImage(fakeaws.Image{Name: "by-id", CreationDate: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
		f.aws.AddImage(fakeaws.Image{Name: "golden-arm", Architecture: "arm64", CreationDate: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)})
		f.aws.AddImage(fakeaws.Image{Name: "golden-other-owner", Architecture: "arm64", OwnerID: "111122223333", CreationDate: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)})
		viaSSM := f.aws.AddImage(fakeaws.Image{Name: "via-ssm", Architecture: "arm64", CreationDate: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)})
		f.aws.SetParameter("/team/ami", viaSSM.ID)
		nc := tutorialClass("terms")
		nc.Spec.AMIFamily = ptr.To(awsv1.AMIFamilyCustom)
		nc.Spec.AMISelectorTerms = []awsv1.AMISelectorTerm{{ID: byID.ID}, {Name: "golden-*"}, {SSMParameter: "/team/ami"}, {SSMParameter: "/team/none"}}
		create(ctx, nc)
		_, stored := f.reconcile(ctx, "terms")
		var names []string
		for _, a := range stored.Status.AMIs {
			names = append(names, a.Name)
		}
		// Per architecture the newest: golden-arm (the other owner's image is not looked at without an owner).
		Expect(names).To(Equal([]string{"golden-arm", "by-id"}))
	})

	It("creates the instance profile for the role and deletes it once no NodeClaim uses the class", func(ctx SpecContext) {
		create(ctx, tutorialClass("deleted"))
		_, nc := f.reconcile(ctx, "deleted")
		Expect(f.aws.InstanceProfiles()).To(HaveLen(1))

		claim := nodeClaimOf("deleted-claim", "deleted")
		Expect(env.Client.Create(ctx, claim)).To(Succeed())
		Expect(env.Client.Delete(ctx, nc)).To(Succeed())
		result, stored := f.reconcile(ctx, "deleted")
		Expect(stored).NotTo(BeNil(), "the finalizer holds the class while a NodeClaim uses it")
		Expect(result.RequeueAfter).To(Equal(10 * time.Minute))
		Expect(f.aws.InstanceProfiles()).To(HaveLen(1))
		Expect(f.recorder.events).To(ContainElement(HaveField("Message", "Waiting on NodeClaim termination for deleted-claim")))

		Expect(env.Client.Delete(ctx, claim)).To(Succeed())
		_, stored = f.reconcile(ctx, "deleted")
		Expect(stored).To(BeNil(), "the finalizer is released and the class is gone")
		Expect(f.aws.InstanceProfiles()).To(BeEmpty())
	})

	It("makes a new instance profile when the role changes, and reports a role IAM does not know", func(ctx SpecContext) {
		f.aws.AddRole("OtherRole")
		create(ctx, tutorialClass("roles"))
		_, nc := f.reconcile(ctx, "roles")
		first := nc.Status.InstanceProfile

		patch := client.MergeFrom(nc.DeepCopy())
		nc.Spec.Role = "OtherRole"
		Expect(env.Client.Patch(ctx, nc, patch)).To(Succeed())
		f.clock.Step(16 * time.Minute) // past the profile cache
		_, nc = f.reconcile(ctx, "roles")
		Expect(nc.Status.InstanceProfile).NotTo(Equal(first))
		Expect(f.aws.InstanceProfiles()).To(HaveLen(2), "the old profile stays until the class is deleted, as upstream")

		patch = client.MergeFrom(nc.DeepCopy())
		nc.Spec.Role = "NoSuchRole"
		Expect(env.Client.Patch(ctx, nc, patch)).To(Succeed())
		f.clock.Step(16 * time.Minute)
		_, nc = f.reconcile(ctx, "roles")
		profile := condition(nc, awsv1.ConditionTypeInstanceProfileReady)
		Expect(profile.Status).To(Equal(metav1.ConditionFalse))
		Expect(profile.Reason).To(Equal("RoleNotFound"))
		Expect(profile.Message).To(Equal("IAM role NoSuchRole (spec.role) does not exist"))
		Expect(f.aws.InstanceProfiles()).To(HaveLen(2), "the failed attempt's profile is removed")
		Expect(condition(nc, awsv1.ConditionTypeReady).Status).To(Equal(metav1.ConditionFalse))
	})

	It("uses spec.instanceProfile as given and creates nothing", func(ctx SpecContext) {
		nc := tutorialClass("given")
		nc.Spec.Role = ""
		nc.Spec.InstanceProfile = ptr.To("missing-profile")
		create(ctx, nc)
		_, stored := f.reconcile(ctx, "given")
		Expect(stored.Status.InstanceProfile).To(Equal("missing-profile"))
		Expect(condition(stored, awsv1.ConditionTypeInstanceProfileReady).Reason).To(Equal("InstanceProfileNotFound"))
		Expect(f.aws.InstanceProfiles()).To(BeEmpty())
	})

	It("lists active capacity reservations", func(ctx SpecContext) {
		end := time.Date(2026, 12, 1, 0, 0, 30, 0, time.UTC)
		cr := f.aws.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1a", Total: 2, Available: 2, ReservationType: "capacity-block", EndDate: &end, Tags: map[string]string{"team": "a"}})
		f.aws.AddCapacityReservation(fakeaws.CapacityReservation{InstanceType: "m5.large", Zone: "us-east-1a", Total: 2, State: "cancelled", Tags: map[string]string{"team": "a"}})
		nc := tutorialClass("reserved")
		nc.Spec.CapacityReservationSelectorTerms = []awsv1.CapacityReservationSelectorTerm{{Tags: map[string]string{"team": "a"}}}
		create(ctx, nc)
		result, stored := f.reconcile(ctx, "reserved")
		Expect(stored.Status.CapacityReservations).To(HaveLen(1))
		got := stored.Status.CapacityReservations[0]
		Expect(got.ID).To(Equal(cr.ID))
		Expect(got.State).To(Equal("expiring"), "a capacity block within 40 minutes of its end")
		Expect(got.OwnerID).To(Equal(fakeaws.Account))
		Expect(result.RequeueAfter).To(Equal(30*time.Second), "looked at again when the reservation ends")
	})

	It("reports a validator's failure in ValidationSucceeded once the selectors resolved", func(ctx SpecContext) {
		var checked []string
		f.controller.Validators = []nodeclass.Validator{func(_ context.Context, nc *awsv1.EC2NodeClass) (string, string, error) {
			checked = append(checked, nc.Name)
			return "CreateFleetAuthCheckFailed", "Controller isn't authorized to call ec2:CreateFleet", nil
		}}
		broken := tutorialClass("unresolved")
		broken.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-0000000000000dead"}}
		create(ctx, broken)
		f.reconcile(ctx, "unresolved")
		Expect(checked).To(BeEmpty(), "validators wait for the selectors")

		create(ctx, tutorialClass("unauthorized"))
		result, stored := f.reconcile(ctx, "unauthorized")
		Expect(checked).To(Equal([]string{"unauthorized"}))
		validation := condition(stored, awsv1.ConditionTypeValidationSucceeded)
		Expect(validation.Status).To(Equal(metav1.ConditionFalse))
		Expect(validation.Reason).To(Equal("CreateFleetAuthCheckFailed"))
		ready := condition(stored, awsv1.ConditionTypeReady)
		Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		Expect(ready.Message).To(Equal("ValidationSucceeded=False (Controller isn't authorized to call ec2:CreateFleet)"))
		Expect(result.RequeueAfter).To(Equal(time.Minute))
	})

	It("retries throttled calls", func(ctx SpecContext) {
		f.aws.Faults().Throttle("ec2", "DescribeSubnets", 2)
		f.aws.Faults().Throttle("ssm", "GetParameter", 1)
		f.aws.Faults().Throttle("iam", "CreateInstanceProfile", 1)
		create(ctx, tutorialClass("throttled"))
		_, nc := f.reconcile(ctx, "throttled")
		Expect(condition(nc, awsv1.ConditionTypeReady).Status).To(Equal(metav1.ConditionTrue))
		Expect(f.aws.Faults().Calls("ec2", "DescribeSubnets")).To(Equal(3))
		Expect(f.aws.Faults().Calls("iam", "CreateInstanceProfile")).To(Equal(2))
		Expect(f.aws.InstanceProfiles()).To(HaveLen(1))
	})
})

var _ = Describe("EC2NodeClass hash", func() {
	It("annotates the class with its hash and the hash version, and follows spec changes", func(ctx SpecContext) {
		create(ctx, tutorialClass("hashed"))
		controller := nodeclass.NewHashController(env.Client, nil)
		request := reconcile.Request{NamespacedName: client.ObjectKey{Name: "hashed"}}
		_, err := controller.Reconcile(ctx, request)
		Expect(err).NotTo(HaveOccurred())
		nc := &awsv1.EC2NodeClass{}
		Expect(env.Client.Get(ctx, request.NamespacedName, nc)).To(Succeed())
		Expect(nc.Annotations).To(HaveKeyWithValue(awsv1.AnnotationEC2NodeClassHashVersion, "v5"))
		first := nc.Annotations[awsv1.AnnotationEC2NodeClassHash]
		Expect(first).To(Equal(nc.Hash(nil)))

		patch := client.MergeFrom(nc.DeepCopy())
		nc.Spec.SubnetSelectorTerms = []awsv1.SubnetSelectorTerm{{ID: "subnet-0abc"}}
		Expect(env.Client.Patch(ctx, nc, patch)).To(Succeed())
		_, err = controller.Reconcile(ctx, request)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Get(ctx, request.NamespacedName, nc)).To(Succeed())
		Expect(nc.Annotations[awsv1.AnnotationEC2NodeClassHash]).To(Equal(first), "selector terms are not hashed")

		patch = client.MergeFrom(nc.DeepCopy())
		nc.Spec.Tags = map[string]string{"team": "a"}
		Expect(env.Client.Patch(ctx, nc, patch)).To(Succeed())
		_, err = controller.Reconcile(ctx, request)
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Get(ctx, request.NamespacedName, nc)).To(Succeed())
		Expect(nc.Annotations[awsv1.AnnotationEC2NodeClassHash]).NotTo(Equal(first), "tags are")
	})

	It("re-stamps the class's NodeClaims when the hash version changes, leaving drifted ones alone", func(ctx SpecContext) {
		nc := tutorialClass("versioned")
		nc.Annotations = map[string]string{awsv1.AnnotationEC2NodeClassHash: "1", awsv1.AnnotationEC2NodeClassHashVersion: "v4"}
		create(ctx, nc)
		claim := nodeClaimOf("versioned-claim", "versioned")
		claim.Annotations = map[string]string{awsv1.AnnotationEC2NodeClassHash: "1", awsv1.AnnotationEC2NodeClassHashVersion: "v4"}
		Expect(env.Client.Create(ctx, claim)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, claim))).To(Succeed()) })

		_, err := nodeclass.NewHashController(env.Client, nil).Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "versioned"}})
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(claim), claim)).To(Succeed())
		Expect(claim.Annotations).To(HaveKeyWithValue(awsv1.AnnotationEC2NodeClassHashVersion, "v5"))
		Expect(claim.Annotations).To(HaveKeyWithValue(awsv1.AnnotationEC2NodeClassHash, nc.Hash(nil)))
	})
})

// image is an image name and one requirement set it serves.
type image struct {
	name string
	reqs []corev1.NodeSelectorRequirement
}

func standard(arch string) []corev1.NodeSelectorRequirement {
	return []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}},
		{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpDoesNotExist},
		{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpDoesNotExist},
	}
}

func gpu(arch string) []corev1.NodeSelectorRequirement {
	return []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}},
		{Key: awsv1.LabelInstanceGPUCount, Operator: corev1.NodeSelectorOpExists},
	}
}

func neuron(arch string) []corev1.NodeSelectorRequirement {
	return []corev1.NodeSelectorRequirement{
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}},
		{Key: awsv1.LabelInstanceAcceleratorCount, Operator: corev1.NodeSelectorOpExists},
	}
}

// requirementsKey identifies a requirement list, in its order.
func requirementsKey(reqs []corev1.NodeSelectorRequirement) string {
	var s string
	for _, r := range reqs {
		s += r.Key + " " + string(r.Operator) + " " + strings.Join(r.Values, ",") + ";"
	}
	return s
}
