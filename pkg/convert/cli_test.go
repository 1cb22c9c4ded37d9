package convert_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-autoscaler/lathe/pkg/convert"
)

// run runs karpenter-convert's main logic with the given arguments and standard input.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = convert.Run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunFilesAndStdin converts a file and standard input in one run: the output is the two conversions
// joined, in the order of the -f flags, whichever spelling of the flag is used.
func TestRunFilesAndStdin(t *testing.T) {
	stdin := readFile(t, "testdata/v1beta1_whenempty.yaml")
	code, stdout, stderr := run(t, stdin, "-f", "testdata/v1alpha5_provider.yaml", "--filename", "-")
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	want := readFile(t, "testdata/v1alpha5_provider.golden") + "---\n" + readFile(t, "testdata/v1beta1_whenempty.golden")
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	if !strings.Contains(stderr, "note: <stdin>, document 4 (EC2NodeClass ubuntu): spec.amiFamily: Ubuntu became AL2") {
		t.Errorf("stderr does not name the stdin document:\n%s", stderr)
	}
}

// TestRunDirectory converts every manifest file of a directory, in name order.
func TestRunDirectory(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "testdata/v1alpha5_provider.yaml", filepath.Join(dir, "b.yml"))
	copyFile(t, "testdata/v1alpha5_ignore_defaults.yaml", filepath.Join(dir, "a.yaml"))
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a manifest"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "", "--ignore-defaults", "-f", dir)
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr)
	}
	if !strings.HasPrefix(stdout, readFile(t, "testdata/v1alpha5_ignore_defaults.golden")+"---\n") {
		t.Errorf("a.yaml's NodePool does not come first:\n%s", stdout)
	}
	if strings.Count(stdout, "\nkind: ") != 4 {
		t.Errorf("want 4 objects (3 NodePools, 1 EC2NodeClass):\n%s", stdout)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	if err := os.WriteFile(to, []byte(readFile(t, from)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunWritesNothingOnError checks that a problem in any document fails the whole run: non-zero exit code,
// nothing on stdout (not even the documents that converted), and the problem with its document and field.
func TestRunWritesNothingOnError(t *testing.T) {
	stdin := readFile(t, "testdata/v1alpha5_provider.yaml") + "\n---\n" + templateBase + "  launchTemplate: lt\n"
	code, stdout, stderr := run(t, stdin, "-f", "-")
	if code == 0 {
		t.Fatal("exit code 0, want non-zero")
	}
	if stdout != "" {
		t.Errorf("stdout is not empty:\n%s", stdout)
	}
	if !strings.Contains(stderr, "error: cannot convert (1 problem(s)):\n  <stdin>, document 2 (AWSNodeTemplate default): spec.launchTemplate: cannot convert a launch template reference") {
		t.Errorf("stderr:\n%s", stderr)
	}
}

func TestRunUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no -f", nil, 2, "must specify -f"},
		{"positional argument", []string{"provisioner.yaml"}, 2, "name inputs with -f"},
		{"unknown flag", []string{"-o", "json"}, 2, "flag provided but not defined: -o"},
		{"missing file", []string{"-f", "testdata/nope.yaml"}, 1, "reading testdata/nope.yaml"},
		{"nothing to convert", []string{"-f", "-"}, 1, "no Karpenter objects to convert"},
		{"help", []string{"-h"}, 0, "Usage: karpenter-convert"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit code %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout is not empty: %q", stdout)
			}
		})
	}
}
