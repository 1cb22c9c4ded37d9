package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// DashboardsDir and RulesFile are where the chart keeps its dashboards and alerts, relative to the repository root.
const (
	DashboardsDir = "charts/lathe/dashboards"
	RulesFile     = "charts/lathe/files/prometheus-rules.yaml"
)

// Dashboard is the part of a Grafana dashboard the tests read.
type Dashboard struct {
	File       string  `json:"-"`
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Panel is a Grafana panel; rows hold their collapsed panels in Panels.
type Panel struct {
	Title      string      `json:"title"`
	Type       string      `json:"type"`
	Datasource *Datasource `json:"datasource"`
	Targets    []Target    `json:"targets"`
	Panels     []Panel     `json:"panels"`
}

// Target is one query of a panel.
type Target struct {
	RefID      string      `json:"refId"`
	Expr       string      `json:"expr"`
	Datasource *Datasource `json:"datasource"`
}

// Datasource points a panel, target or variable at a data source.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Variable is a dashboard template variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Definition string          `json:"definition"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
	Datasource *Datasource     `json:"datasource"`
	Current    struct {
		Value json.RawMessage `json:"value"`
	} `json:"current"`
}

// Query is one PromQL expression of a dashboard, as written (with Grafana's variables).
type Query struct {
	Dashboard, Panel, RefID, Expr string
}

func (q Query) String() string {
	return fmt.Sprintf("%s / %q / %s", q.Dashboard, q.Panel, q.RefID)
}

// LoadDashboards reads every dashboard in root's DashboardsDir, sorted by file name.
func LoadDashboards(root string) ([]*Dashboard, error) {
	files, err := filepath.Glob(filepath.Join(root, DashboardsDir, "*.json"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []*Dashboard
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading dashboard, %w", err)
		}
		d := &Dashboard{File: filepath.Base(f)}
		if err := json.Unmarshal(b, d); err != nil {
			return nil, fmt.Errorf("decoding dashboard %s, %w", d.File, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// AllPanels returns the dashboard's panels, including those inside rows, rows themselves left out.
func (d *Dashboard) AllPanels() []Panel {
	var out []Panel
	var walk func([]Panel)
	walk = func(ps []Panel) {
		for _, p := range ps {
			if p.Type != "row" {
				out = append(out, p)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out
}

// Queries returns every panel target's expression.
func (d *Dashboard) Queries() []Query {
	var out []Query
	for _, p := range d.AllPanels() {
		for _, t := range p.Targets {
			out = append(out, Query{Dashboard: d.File, Panel: p.Title, RefID: t.RefID, Expr: t.Expr})
		}
	}
	return out
}

// labelValues matches Grafana's label_values(selector, label) variable query.
var labelValues = regexp.MustCompile(`^\s*label_values\(\s*(.+?)\s*,\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\)\s*$`)

// VariableQueries returns the PromQL equivalent of each query variable (label_values(s, l) lists the values
// of l that group by (l) (s) returns); a variable query of another form is an error.
func (d *Dashboard) VariableQueries() ([]Query, error) {
	var out []Query
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q := v.Definition
		var structured struct {
			Query string `json:"query"`
		}
		if json.Unmarshal(v.Query, &structured) == nil && structured.Query != "" {
			q = structured.Query
		} else if s := ""; json.Unmarshal(v.Query, &s) == nil && s != "" {
			q = s
		}
		m := labelValues.FindStringSubmatch(q)
		if m == nil {
			return nil, fmt.Errorf("%s: variable %s: query %q is not label_values(selector, label)", d.File, v.Name, q)
		}
		out = append(out, Query{Dashboard: d.File, Panel: "variable " + v.Name, RefID: v.Name, Expr: fmt.Sprintf("group by (%s) (%s)", m[2], m[1])})
	}
	return out, nil
}

// Builtins are values for Grafana's global variables, as Grafana fills them for a query over the last hour
// with a 1s scrape interval.
func Builtins() map[string]string {
	return map[string]string{
		"__rate_interval": "1m",
		"__interval":      "15s",
		"__interval_ms":   "15000",
		"__range":         "1h",
		"__range_s":       "3600",
		"__range_ms":      "3600000",
	}
}

// Values returns what Grafana puts in place of each of the dashboard's variables when every one is at
// "All" (its allValue, or .* when it has none) or, for a variable without "All", at its current value,
// together with builtins.
func (d *Dashboard) Values(builtins map[string]string) (map[string]string, error) {
	vals := map[string]string{}
	for k, v := range builtins {
		vals[k] = v
	}
	for _, v := range d.Templating.List {
		switch {
		case v.Type == "datasource":
			vals[v.Name] = "prometheus"
		case v.IncludeAll && v.AllValue != "":
			vals[v.Name] = v.AllValue
		case v.IncludeAll:
			vals[v.Name] = ".*"
		default:
			var s string
			if err := json.Unmarshal(v.Current.Value, &s); err != nil {
				return nil, fmt.Errorf("%s: variable %s has neither All nor a current value", d.File, v.Name)
			}
			vals[v.Name] = s
		}
	}
	return vals, nil
}

// reference matches Grafana's variable syntaxes: ${name}, ${name:format}, [[name]] and $name.
var reference = regexp.MustCompile(`\$\{([a-zA-Z0-9_]+)(?::[a-zA-Z0-9_]+)?\}|\[\[([a-zA-Z0-9_]+)(?::[a-zA-Z0-9_]+)?\]\]|\$([a-zA-Z0-9_]+)`)

// Expand replaces the Grafana variables in expr with vals; a variable missing from vals is an error.
func Expand(expr string, vals map[string]string) (string, error) {
	var missing []string
	out := reference.ReplaceAllStringFunc(expr, func(ref string) string {
		m := reference.FindStringSubmatch(ref)
		name := m[1] + m[2] + m[3]
		v, ok := vals[name]
		if !ok {
			missing = append(missing, name)
			return ref
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("unknown variables %s in %q", strings.Join(missing, ", "), expr)
	}
	return out, nil
}
