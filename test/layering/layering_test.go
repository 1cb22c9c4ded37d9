// Package layering checks that every import of the project's own packages runs down the floors
// docs/architecture.md draws: API types, then the requirement algebra, the provider boundary, the catalog
// and simulator, state and providers, controllers, and commands and harnesses on top.
package layering

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/lathe-autoscaler/lathe/"

// floors lists folder prefixes from the ground up; the longest matching prefix decides a package's floor.
var floors = [][]string{
	{"pkg/apis", "pkg/metrics", "pkg/events", "pkg/fieldpatch", "pkg/operator/logging", "pkg/operator/options", "pkg/operator/poll"},
	{"pkg/scheduling"},
	{"pkg/cloudprovider"},
	{"pkg/catalog", "pkg/simulation"},
	{"pkg/state", "pkg/providers"},
	{"pkg/controllers", "pkg/operator"},
	{"cmd", "pkg/convert", "pkg/localcluster", "pkg/loopback", "pkg/test", "test", "hack"},
}

func floorOf(dir string) (int, bool) {
	best, floor := -1, 0
	for f, prefixes := range floors {
		for _, p := range prefixes {
			if (dir == p || strings.HasPrefix(dir, p+"/")) && len(p) > best {
				best, floor = len(p), f
			}
		}
	}
	return floor, best >= 0
}

func TestImportsRunDown(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		// Test files may reach up to harnesses (pkg/test, the local cluster); go list's Imports leaves them out too.
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		from, ok := floorOf(filepath.ToSlash(rel))
		if !ok {
			t.Errorf("%s: folder %s has no floor in this test (add it, and to docs/architecture.md)", path, rel)
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !strings.HasPrefix(p, module) {
				continue
			}
			target := strings.TrimPrefix(p, module)
			to, ok := floorOf(target)
			checked++
			if !ok || to > from {
				t.Errorf("%s (floor %d) imports %s (floor %d): imports must run down", rel, from, target, to)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no imports checked: the walk found no Go files")
	}
}
