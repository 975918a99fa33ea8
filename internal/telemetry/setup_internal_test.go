package telemetry

import (
	"testing"

	"go.opentelemetry.io/otel/sdk/resource"
)

// sdkResource stands in for resource.Default() without its detectors: it
// must carry Default's schema URL and telemetry.sdk.* attributes exactly
// (an SDK upgrade that changes them fails here), and nothing else —
// service.name and OTEL_RESOURCE_ATTRIBUTES come from Setup.
func TestResourceMatchesSDKDefault(t *testing.T) {
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	t.Setenv("OTEL_SERVICE_NAME", "")
	def, ours := resource.Default(), sdkResource()
	if ours.SchemaURL() != def.SchemaURL() {
		t.Errorf("schema URL %q, Default's %q", ours.SchemaURL(), def.SchemaURL())
	}
	want := map[string]string{}
	for _, kv := range def.Attributes() {
		if kv.Key != "service.name" {
			want[string(kv.Key)] = kv.Value.String()
		}
	}
	got := map[string]string{}
	for _, kv := range ours.Attributes() {
		got[string(kv.Key)] = kv.Value.String()
	}
	if len(got) != len(want) {
		t.Errorf("attributes %v, Default's (without service.name) %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, Default's %q", k, got[k], v)
		}
	}
}
