package worker_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The example Grafana dashboard is valid JSON and queries only series that
// docs/WORKER.md documents (so a renamed metric cannot leave it silently
// empty).
func TestGrafanaDashboardUsesDocumentedSeries(t *testing.T) {
	raw, err := os.ReadFile("../examples/grafana/odek-worker.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard is not valid JSON: %v", err)
	}
	doc, err := os.ReadFile("../docs/WORKER.md")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`odek_[a-z_]+`)
	n := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, m := range name.FindAllString(tg.Expr, -1) {
				n++
				base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(m, "_bucket"), "_count"), "_sum")
				if !strings.Contains(string(doc), "`"+base+"`") {
					t.Errorf("panel %q queries %s, which docs/WORKER.md does not document", p.Title, m)
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d odek series in the dashboard", n)
	}
}
