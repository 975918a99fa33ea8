package redact

import (
	"strings"
	"testing"
)

func TestIsSecretEnvName(t *testing.T) {
	long := strings.Repeat("X", 80)
	for _, tc := range []struct {
		name       string
		env, loose bool // IsSecretEnvName, IsSecretName
	}{
		{"OPENAI_API_KEY", true, true},
		{"db-passwd", true, true},
		{"MAX_TOKENS", true, false}, // a count for the redactor, still stripped from a server's env
		{"TOKENIZER_PATH", true, false},
		{"MY_TOKEN_" + long, true, false}, // the whole name counts for env names
		{"HOME", false, false},
		{"PATH", false, false},
	} {
		if got := IsSecretEnvName(tc.name); got != tc.env {
			t.Errorf("IsSecretEnvName(%q) = %v", tc.name, got)
		}
		if got := IsSecretName(tc.name); got != tc.loose {
			t.Errorf("IsSecretName(%q) = %v", tc.name, got)
		}
	}
}
