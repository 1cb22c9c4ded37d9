package userdata

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenCases are the documents kept under testdata/<name>.golden, one or more per family.
func goldenCases() map[string]Options {
	full := func(family string) Options {
		o := options(family)
		o.Kubelet = kubelet()
		return o
	}
	raid0 := func(family string) Options {
		o := options(family)
		o.InstanceStorePolicy = ptr(awsv1.InstanceStorePolicyRAID0)
		return o
	}
	withUserData := func(family, userData string) Options {
		o := options(family)
		o.CustomUserData = ptr(userData)
		return o
	}
	return map[string]Options{
		"al2023":               full(awsv1.AMIFamilyAL2023),
		"al2023-raid0":         raid0(awsv1.AMIFamilyAL2023),
		"al2023-shell":         withUserData(awsv1.AMIFamilyAL2023, "#!/bin/bash\necho hello\n"),
		"al2023-nodeconfig":    withUserData(awsv1.AMIFamilyAL2023, userNodeConfig),
		"al2023-mime":          withUserData(awsv1.AMIFamilyAL2023, userMIME),
		"al2":                  full(awsv1.AMIFamilyAL2),
		"al2-raid0":            raid0(awsv1.AMIFamilyAL2),
		"al2-shell":            withUserData(awsv1.AMIFamilyAL2, "#!/bin/bash\necho hello\n"),
		"bottlerocket":         full(awsv1.AMIFamilyBottlerocket),
		"bottlerocket-raid0":   raid0(awsv1.AMIFamilyBottlerocket),
		"bottlerocket-merged":  withUserData(awsv1.AMIFamilyBottlerocket, userBottlerocket),
		"windows2019":          full(awsv1.AMIFamilyWindows2019),
		"windows2022":          full(awsv1.AMIFamilyWindows2022),
		"windows2025-userdata": withUserData(awsv1.AMIFamilyWindows2025, "Write-Host 'hello'"),
		"custom":               withUserData(awsv1.AMIFamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh 'demo'\n"),
	}
}

const userNodeConfig = `apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      maxPods: 50
      shutdownGracePeriod: 30s
    flags:
    - --node-labels "user=label"
`

const userMIME = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "from the node class"

--BOUNDARY
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    config:
      shutdownGracePeriod: 30s

--BOUNDARY--
`

const userBottlerocket = `[settings.host-containers.admin]
enabled = true

[settings.kubernetes]
cluster-name = 'not-demo'
api-server = 'https://elsewhere.example.com'
max-pods = 10
image-gc-high-threshold-percent = '90'
allowed-unsafe-sysctls = ['net.core.somaxconn']
unknown-setting = 'dropped'

[settings.kubernetes.node-labels]
team = 'mobile'
user = 'label'

[settings.kubernetes.node-taints]
user = ['true:NoSchedule']
`

func TestGolden(t *testing.T) {
	for name, o := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			doc, err := Render(o)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			path := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading %s (run go test -update to write it): %v", path, err)
			}
			if doc != string(want) {
				t.Errorf("Render(%s) differs from %s (go test -update rewrites it):\n%s", name, path, doc)
			}
			again, err := Render(o)
			if err != nil || again != doc {
				t.Errorf("Render(%s) is not deterministic", name)
			}
		})
	}
}
