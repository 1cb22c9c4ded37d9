package localcluster_test

import (
	"strings"
	"testing"

	"github.com/lathe-autoscaler/lathe/pkg/localcluster"
)

func TestSubstitute(t *testing.T) {
	vars := map[string]string{"CLUSTER_NAME": "lathe-local", "AMD_AMI_ID": "ami-0123456789abcdef0", "EMPTY": ""}
	for _, tc := range []struct {
		name, in, want string
		wantErr        []string
	}{
		{name: "no placeholders", in: "kind: NodePool\n", want: "kind: NodePool\n"},
		{name: "one", in: `role: "KarpenterNodeRole-${CLUSTER_NAME}"`, want: `role: "KarpenterNodeRole-lathe-local"`},
		{name: "several and repeated", in: "${CLUSTER_NAME}/${AMD_AMI_ID}/${CLUSTER_NAME}", want: "lathe-local/ami-0123456789abcdef0/lathe-local"},
		{name: "empty value", in: "a${EMPTY}b", want: "ab"},
		{name: "lone dollar kept", in: "cost: $5, $CLUSTER_NAME, ^a$", want: "cost: $5, $CLUSTER_NAME, ^a$"},
		{name: "not a variable name kept", in: "${1abc} ${a-b} ${} ${", want: "${1abc} ${a-b} ${} ${"},
		{name: "placeholder after a kept one", in: "${a b}${CLUSTER_NAME}", want: "${a b}lathe-local"},
		{name: "missing values named once, sorted", in: "${ZONE} ${REGION} ${ZONE}", wantErr: []string{"REGION, ZONE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := localcluster.Substitute([]byte(tc.in), vars)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Substitute() = %q, want an error", got)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Substitute() error = %q, want it to contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("Substitute() error = %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("Substitute() = %q, want %q", got, tc.want)
			}
		})
	}
}
