package host

import (
	"io"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/queue"
)

// A job's model (Telegram's /model) runs only when the operator allows
// it; anything else runs the default model.
func TestJobModelOnlyWhenAllowed(t *testing.T) {
	log := logrus.New()
	log.SetOutput(io.Discard)
	base := &config.Config{Model: "default-model"}
	for _, tt := range []struct {
		name    string
		j       JobRunner
		model   string
		want    string
		sameCfg bool
	}{
		{"no choice", JobRunner{Config: base, AllowedModels: []string{"big"}}, "", "default-model", true},
		{"allowed", JobRunner{Config: base, AllowedModels: []string{"small", "big"}}, "big", "big", false},
		{"not allowed", JobRunner{Config: base, AllowedModels: []string{"small"}}, "big", "default-model", true},
		{"none allowed", JobRunner{Config: base}, "big", "default-model", true},
		{"from the environment", JobRunner{Config: base, Environ: []string{"ODEK_TELEGRAM_MODELS= small , big,"}}, "big", "big", false},
		{"explicit list wins", JobRunner{Config: base, AllowedModels: []string{}, Environ: []string{"ODEK_TELEGRAM_MODELS=big"}}, "big", "default-model", true},
	} {
		got := tt.j.jobConfig(queue.Job{Model: tt.model}, log)
		if got.Model != tt.want || (got == base) != tt.sameCfg {
			t.Errorf("%s: model %q (same config %v), want %q (%v)", tt.name, got.Model, got == base, tt.want, tt.sameCfg)
		}
	}
	if base.Model != "default-model" {
		t.Errorf("the runner's config was changed: %q", base.Model)
	}
	if got := ParseModels(" a,b,,a , c"); len(got) != 3 || got[0] != "a" || got[2] != "c" {
		t.Errorf("ParseModels = %q", got)
	}
}
