package userdata

import (
	"os"
	"path/filepath"
	"testing"

	awsv1 "github.com/lathe-autoscaler/lathe/pkg/apis/aws/v1"
)

// FuzzParse: no document, however malformed, makes Parse panic; it returns a Node or an error. The golden
// documents are the seeds.
func FuzzParse(f *testing.F) {
	goldens, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil {
		f.Fatal(err)
	}
	for _, path := range goldens {
		doc, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(doc))
	}
	families := []string{
		awsv1.AMIFamilyAL2023, awsv1.AMIFamilyAL2, awsv1.AMIFamilyBottlerocket,
		awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyCustom,
	}
	f.Fuzz(func(t *testing.T, doc string) {
		for _, family := range families {
			_, _ = Parse(family, doc)
		}
	})
}
