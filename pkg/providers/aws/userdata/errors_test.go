package userdata

import (
	"strings"
	"testing"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// TestMalformedUserDataIsAClearError: Render refuses class userData it cannot merge, naming the problem.
func TestMalformedUserDataIsAClearError(t *testing.T) {
	brokenMIME := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"B\"\n\n--B\nContent-Type: text/x-shellscript\n\necho unterminated"
	for _, tc := range []struct{ name, family, userData, want string }{
		{"AL2023 MIME without an end", awsv1.AMIFamilyAL2023, brokenMIME, "reading MIME part 1"},
		{"AL2023 MIME that is not multipart", awsv1.AMIFamilyAL2023, "MIME-Version: 1.0\nContent-Type: text/plain\n\nhi", "not multipart"},
		{"AL2 MIME without a Content-Type", awsv1.AMIFamilyAL2, "MIME-Version: 1.0\n\nhi", "Content-Type"},
		{"Bottlerocket not TOML", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes\nmax-pods = ", "not valid TOML"},
		{"Bottlerocket settings not a table", awsv1.AMIFamilyBottlerocket, "settings = 'x'", "settings is a string, not a table"},
		{"Bottlerocket kubernetes not a table", awsv1.AMIFamilyBottlerocket, "[settings]\nkubernetes = 1", "settings.kubernetes is a int64, not a table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Render(withUserData(tc.family, tc.userData))
			if err == nil || !strings.Contains(err.Error(), "userData") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one about the node class's userData containing %q", err, tc.want)
			}
		})
	}
}

// TestRenderErrors: unknown families and missing AL2023 inputs fail instead of writing a node that never joins.
func TestRenderErrors(t *testing.T) {
	if _, err := Render(options("Ubuntu")); err == nil || !strings.Contains(err.Error(), `unknown AMI family "Ubuntu"`) {
		t.Errorf("unknown family: %v", err)
	}
	o := options(awsv1.AMIFamilyAL2023)
	o.ClusterCIDR = ""
	if _, err := Render(o); err == nil || !strings.Contains(err.Error(), "service CIDR") {
		t.Errorf("AL2023 without a CIDR: %v", err)
	}
	o = options(awsv1.AMIFamilyAL2023)
	o.ClusterCABundle = "not base64!"
	if _, err := Render(o); err == nil || !strings.Contains(err.Error(), "CA bundle") {
		t.Errorf("AL2023 with a bad CA: %v", err)
	}
}

// TestParseErrors: documents a node could not join with are errors that say why.
func TestParseErrors(t *testing.T) {
	al2023 := render(t, options(awsv1.AMIFamilyAL2023))
	al2 := render(t, options(awsv1.AMIFamilyAL2))
	for _, tc := range []struct{ name, family, doc, want string }{
		{"AL2023 without a NodeConfig part", awsv1.AMIFamilyAL2023, render(t, options(awsv1.AMIFamilyAL2)), "no application/node.eks.aws part"},
		{"AL2023 wrong apiVersion", awsv1.AMIFamilyAL2023, strings.Replace(al2023, "node.eks.aws/v1alpha1", "node.eks.aws/v9", 1), `apiVersion "node.eks.aws/v9"`},
		{"AL2023 no cluster name", awsv1.AMIFamilyAL2023, strings.Replace(al2023, "    name: demo\n", "", 1), "no spec.cluster.name"},
		{"AL2023 bad YAML", awsv1.AMIFamilyAL2023, "apiVersion: [", "not valid YAML"},
		{"AL2023 bad taint", awsv1.AMIFamilyAL2023, strings.Replace(al2023, "effect: NoSchedule", "effect: Sometimes", 1), `unknown effect "Sometimes"`},
		{"AL2 no bootstrap", awsv1.AMIFamilyAL2, "#!/bin/bash\necho hi\n", "no call to /etc/eks/bootstrap.sh"},
		{"AL2 unterminated quote", awsv1.AMIFamilyAL2, strings.Replace(al2, "'demo'", "'demo", 1), "unterminated"},
		{"AL2 no cluster name", awsv1.AMIFamilyAL2, "/etc/eks/bootstrap.sh --apiserver-endpoint x", "without a cluster name"},
		{"AL2 bad max pods", awsv1.AMIFamilyAL2, strings.Replace(al2, "--max-pods=29", "--max-pods=many", 1), `"many" is not a 32-bit integer`},
		{"Bottlerocket not TOML", awsv1.AMIFamilyBottlerocket, "<powershell>", "not valid TOML"},
		{"Bottlerocket no kubernetes", awsv1.AMIFamilyBottlerocket, "[settings.host-containers.admin]\nenabled = true", "no [settings.kubernetes]"},
		{"Bottlerocket no cluster name", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes]\napi-server = 'x'", "cluster-name is not set"},
		{"Bottlerocket taint without effect", awsv1.AMIFamilyBottlerocket, "[settings.kubernetes]\ncluster-name = 'demo'\n[settings.kubernetes.node-taints]\na = ['b']", "has no effect"},
		{"Windows no block", awsv1.AMIFamilyWindows2022, "Write-Host hi", "no <powershell>"},
		{"Windows no bootstrap", awsv1.AMIFamilyWindows2022, "<powershell>\nWrite-Host hi\n</powershell>", "no call to Start-EKSBootstrap.ps1"},
		{"Custom empty", awsv1.AMIFamilyCustom, "  \n", "empty"},
		{"Custom unreadable", awsv1.AMIFamilyCustom, "just some text", "not valid TOML"},
		{"unknown family", "Ubuntu", al2, `unknown AMI family "Ubuntu"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.family, tc.doc)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
