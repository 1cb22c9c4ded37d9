// Command metricsdoc writes docs/metrics.txt and docs/metrics.md from the metrics the code declares: it
// builds every component that owns metrics on a metrics.Catalog (controllers.DescribeMetrics and the
// operator's build info) and lists what was created. `make generate` runs it; `make verify-generate` fails
// when the checked-in files differ.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/lathe-autoscaler/lathe/pkg/cloudprovider/fake"
	"github.com/lathe-autoscaler/lathe/pkg/controllers"
	"github.com/lathe-autoscaler/lathe/pkg/metrics"
	"github.com/lathe-autoscaler/lathe/pkg/operator"
)

func main() {
	dir := flag.String("dir", "docs", "folder to write metrics.txt and metrics.md to")
	flag.Parse()
	families := Families()
	for name, content := range map[string][]byte{"metrics.txt": List(families), "metrics.md": Markdown(families)} {
		if err := os.WriteFile(filepath.Join(*dir, name), content, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// Families are every metric family Lathe declares, sorted by name.
func Families() []metrics.Family {
	catalog := metrics.NewCatalog()
	operator.RegisterBuildInfo(catalog, "", "")
	controllers.DescribeMetrics(catalog, fake.New())
	return catalog.Families()
}

// List is docs/metrics.txt: one line per family, "<name> <type> <labels>", labels sorted and joined by
// commas, or "-" when there are none.
func List(families []metrics.Family) []byte {
	var b bytes.Buffer
	for _, f := range families {
		fmt.Fprintf(&b, "%s %s %s\n", f.Name, f.Type, labelList(f.Labels))
	}
	return b.Bytes()
}

func labelList(labels []string) string {
	if len(labels) == 0 {
		return "-"
	}
	sorted := slices.Clone(labels)
	slices.Sort(sorted)
	return strings.Join(sorted, ",")
}

// Markdown is docs/metrics.md: the families with their help, labels and buckets, followed by the
// hand-maintained section on upstream metrics Lathe does not serve (notApplicable).
func Markdown(families []metrics.Family) []byte {
	var b bytes.Buffer
	b.WriteString(header)
	for _, f := range families {
		fmt.Fprintf(&b, "### `%s`\n\n%s\n\n- type: %s\n- labels: %s\n", f.Name, f.Help, f.Type, markdownLabels(f.Labels))
		if len(f.Buckets) > 0 {
			fmt.Fprintf(&b, "- buckets: %s\n", buckets(f.Buckets))
		}
		b.WriteString("\n")
	}
	b.WriteString(notApplicable)
	return b.Bytes()
}

func markdownLabels(labels []string) string {
	if len(labels) == 0 {
		return "none"
	}
	sorted := slices.Clone(labels)
	slices.Sort(sorted)
	return "`" + strings.Join(sorted, "`, `") + "`"
}

func buckets(bs []float64) string {
	out := make([]string, len(bs))
	for i, v := range bs {
		out[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(out, ", ")
}
