package monitoring

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
)

// Parser is Prometheus's PromQL parser with its default options.
var Parser = parser.NewParser(parser.Options{})

// Selector is a series selector of an expression: the metric name and the labels its matchers name.
type Selector struct {
	Name   string
	Labels []string
}

// Selectors parses expr and returns its series selectors in the order they appear; a selector without a
// literal metric name is an error, so every series an expression reads can be checked.
func Selectors(expr string) ([]Selector, error) {
	node, err := Parser.ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var out []Selector
	var bad error
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		s := Selector{Name: vs.Name}
		for _, m := range vs.LabelMatchers {
			switch {
			case m.Name != labels.MetricName:
				s.Labels = append(s.Labels, m.Name)
			case m.Type != labels.MatchEqual:
				bad = fmt.Errorf("selector %s matches the metric name with %s", vs, m.Type)
			default:
				s.Name = m.Value
			}
		}
		if s.Name == "" && bad == nil {
			bad = fmt.Errorf("selector %s names no metric", vs)
		}
		out = append(out, s)
		return nil
	})
	return out, bad
}

// Rule is one alerting or recording rule of the rules file.
type Rule struct {
	Group string
	rulefmt.Rule
}

// LoadRules parses root's RulesFile as Prometheus does (rulefmt, unknown fields rejected, expressions and
// templates checked) and returns its rules.
func LoadRules(root string) ([]Rule, error) {
	groups, errs := rulefmt.ParseFile(filepath.Join(root, RulesFile), false, model.UTF8Validation, Parser, slog.New(slog.DiscardHandler))
	if len(errs) > 0 {
		return nil, fmt.Errorf("parsing rules, %v", errs)
	}
	var out []Rule
	for _, g := range groups.Groups {
		for _, r := range g.Rules {
			out = append(out, Rule{Group: g.Name, Rule: r})
		}
	}
	return out, nil
}
