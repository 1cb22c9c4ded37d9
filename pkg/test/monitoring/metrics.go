package monitoring

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MetricsFile is the checked-in list of the metric families Lathe exports, relative to the repository root:
// one line per family, "<name> <type> <labels>", labels comma-separated or "-".
const MetricsFile = "docs/metrics.txt"

// Family is one metric family of the list.
type Family struct {
	Name, Type string
	Labels     []string
}

// Metrics is the list of exported families by name.
type Metrics map[string]Family

// LoadMetrics reads root's MetricsFile.
func LoadMetrics(root string) (Metrics, error) {
	f, err := os.Open(filepath.Join(root, MetricsFile))
	if err != nil {
		return nil, fmt.Errorf("reading the list of exported metrics, %w", err)
	}
	defer f.Close()
	out := Metrics{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 3 {
			return nil, fmt.Errorf("%s:%d: want <name> <type> <labels>, got %q", MetricsFile, n, sc.Text())
		}
		fam := Family{Name: fields[0], Type: fields[1]}
		if fields[2] != "-" {
			fam.Labels = strings.Split(fields[2], ",")
		}
		out[fam.Name] = fam
	}
	return out, sc.Err()
}

// Series returns the family whose exposition has series called name, and the labels those series carry:
// a histogram x has x_bucket (with le), x_sum and x_count; a summary x has x (with quantile), x_sum and
// x_count; any other family has only its own name.
func (m Metrics) Series(name string) (Family, []string, bool) {
	if fam, ok := m[name]; ok {
		switch fam.Type {
		case "histogram":
			return Family{}, nil, false
		case "summary":
			return fam, append(slices.Clone(fam.Labels), "quantile"), true
		}
		return fam, fam.Labels, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		fam, ok := m[strings.TrimSuffix(name, suffix)]
		if !ok || !strings.HasSuffix(name, suffix) {
			continue
		}
		switch {
		case suffix == "_bucket" && fam.Type == "histogram":
			return fam, append(slices.Clone(fam.Labels), "le"), true
		case suffix != "_bucket" && (fam.Type == "histogram" || fam.Type == "summary"):
			return fam, fam.Labels, true
		}
	}
	return Family{}, nil, false
}

// Check returns an error unless every series sel selects is exported and every label it matches on is one
// those series carry.
func (m Metrics) Check(sel Selector) error {
	fam, labels, ok := m.Series(sel.Name)
	if !ok {
		return fmt.Errorf("%s is not a series Lathe exports (%s)", sel.Name, MetricsFile)
	}
	for _, l := range sel.Labels {
		if !slices.Contains(labels, l) {
			return fmt.Errorf("%s has no label %q (family %s %s has %v)", sel.Name, l, fam.Name, fam.Type, labels)
		}
	}
	return nil
}
