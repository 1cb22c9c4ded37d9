// Package monitoring reads the Grafana dashboards (charts/lathe/dashboards) and the Prometheus alert rules
// (charts/lathe/files/prometheus-rules.yaml) that ship with Lathe, for the tests that check them: it lists
// every PromQL expression with Grafana's variables filled in as Grafana would, parses expressions with
// Prometheus's own parser, and names the series each one selects so they can be checked against the
// metrics Lathe exports (docs/metrics.txt).
package monitoring
