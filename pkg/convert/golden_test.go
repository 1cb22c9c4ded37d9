package convert_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lathe-autoscaler/lathe/pkg/convert"
)

var update = flag.Bool("update", false, "rewrite the testdata/*.golden files from the converter's output")

// goldenInputs lists testdata/*.yaml; each has <name>.golden (stdout) and <name>.notes.golden (stderr notes).
func goldenInputs(t *testing.T) []string {
	t.Helper()
	inputs, err := filepath.Glob("testdata/*.yaml")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata/*.yaml inputs (%v)", err)
	}
	return inputs
}

// goldenArgs are the command-line arguments a golden input is converted with: a name containing
// "ignore_defaults" runs with --ignore-defaults.
func goldenArgs(input string) []string {
	args := []string{"-f", input}
	if strings.Contains(filepath.Base(input), "ignore_defaults") {
		args = append([]string{"--ignore-defaults"}, args...)
	}
	return args
}

func TestGolden(t *testing.T) {
	for _, input := range goldenInputs(t) {
		name := strings.TrimSuffix(input, ".yaml")
		t.Run(filepath.Base(name), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := convert.Run(goldenArgs(input), nil, &stdout, &stderr); code != 0 {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
			}
			compareGolden(t, name+".golden", stdout.Bytes())
			compareGolden(t, name+".notes.golden", stderr.Bytes())
		})
	}
}

func compareGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
