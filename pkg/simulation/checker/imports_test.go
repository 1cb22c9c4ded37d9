package checker_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsOnlyInputAndPlanTypes keeps the checker independent of the code it checks: besides the API,
// cloud provider and solver Input/Plan types, it may import nothing of the project (in particular not
// pkg/scheduling, whose requests, tolerations and requirement algebra the solver uses).
func TestImportsOnlyInputAndPlanTypes(t *testing.T) {
	const module = "github.com/lathe-autoscaler/lathe/"
	allowed := map[string]bool{
		module + "pkg/apis/v1":           true,
		module + "pkg/cloudprovider":     true,
		module + "pkg/simulation/solver": true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, module) && !allowed[path] {
				t.Errorf("%s imports %s; the checker must not share code with what it checks", name, path)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no source files found")
	}
}
