package docs

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// sdkInput matches the request type of an aws-sdk-go-v2 call, e.g. ec2.CreateFleetInput or
// ec2.NewDescribeImagesPaginator: every call the provider makes builds one of these.
var sdkInput = regexp.MustCompile(`\b(ec2|iam|ssm|eks|pricing|sqs)\.(?:New)?([A-Z][A-Za-z]+?)(?:Input|Paginator)\b`)

// implied are the actions AWS checks on top of the call's own: an instant CreateFleet launches through
// RunInstances, and AddRoleToInstanceProfile needs PassRole on the node role.
var implied = []string{"ec2:RunInstances", "iam:PassRole"}

// TestControllerPolicyCoversTheAWSProvider reads the AWS provider's source (not its tests or the fake AWS),
// collects every AWS API it calls, and checks docs/aws/controller-policy.json, which the EKS guide
// installs, allows each of them, and nothing it never calls.
func TestControllerPolicyCoversTheAWSProvider(t *testing.T) {
	called := map[string]bool{}
	for _, a := range implied {
		called[a] = true
	}
	dir := filepath.Join(root, "pkg", "providers", "aws")
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "fakeaws" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range sdkInput.FindAllStringSubmatch(string(src), -1) {
			called[m[1]+":"+m[2]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !called["ec2:CreateFleet"] || !called["iam:CreateInstanceProfile"] {
		t.Fatalf("found only %v in %s; is the pattern broken?", keys(called), dir)
	}

	allowed := policyActions(t, filepath.Join(root, "docs", "aws", "controller-policy.json"))
	for _, a := range keys(called) {
		if !allowed[a] {
			t.Errorf("the AWS provider calls %s but docs/aws/controller-policy.json does not allow it", a)
		}
	}
	// The interruption queue's actions are the one allowance ahead of the code: Karpenter's chart and
	// guide set INTERRUPTION_QUEUE, and the policy keeps the same shape.
	for _, a := range keys(allowed) {
		if !called[a] && !strings.HasPrefix(a, "sqs:") {
			t.Errorf("docs/aws/controller-policy.json allows %s, which the AWS provider never calls", a)
		}
	}
}

// policyActions returns the actions of an IAM policy document with ${VAR} placeholders.
func policyActions(t *testing.T, path string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version   string
		Statement []struct {
			Sid    string
			Effect string
			Action json.RawMessage
		}
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s is not valid JSON, %v", path, err)
	}
	if doc.Version != "2012-10-17" {
		t.Errorf("policy Version = %q, want 2012-10-17", doc.Version)
	}
	out := map[string]bool{}
	for _, s := range doc.Statement {
		if s.Effect != "Allow" || s.Sid == "" {
			t.Errorf("statement %q: effect %q; want a named Allow", s.Sid, s.Effect)
		}
		var actions []string
		if err := json.Unmarshal(s.Action, &actions); err != nil {
			var one string
			if err := json.Unmarshal(s.Action, &one); err != nil {
				t.Fatalf("statement %s: Action is neither a string nor a list", s.Sid)
			}
			actions = []string{one}
		}
		for _, a := range actions {
			out[a] = true
		}
	}
	return out
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
