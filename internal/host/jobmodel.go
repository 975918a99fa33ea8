package host

import (
	"slices"
	"strings"

	"github.com/sirupsen/logrus"

	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/queue"
)

// ModelsVar lists the models a front end may choose per job (comma
// separated): odek-bot offers them with /model, and a JobRunner without
// AllowedModels honours a job's choice only when it is listed here.
const ModelsVar = "ODEK_TELEGRAM_MODELS"

// ParseModels splits a ModelsVar value: comma separated, blanks dropped,
// duplicates once, order kept.
func ParseModels(s string) []string {
	var out []string
	for _, m := range strings.Split(s, ",") {
		if m = strings.TrimSpace(m); m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// allowedModels is AllowedModels, or ModelsVar from Environ when nil.
func (j *JobRunner) allowedModels() []string {
	if j.AllowedModels != nil {
		return j.AllowedModels
	}
	for _, kv := range j.Environ {
		if v, ok := strings.CutPrefix(kv, ModelsVar+"="); ok {
			return ParseModels(v)
		}
	}
	return nil
}

// jobConfig is the configuration a job runs with: the runner's, with the
// job's model when the operator allows it. A model not allowed is ignored
// (logged), never run: whoever can write to the queue must not pick a
// model the operator did not list (fail closed).
func (j *JobRunner) jobConfig(job queue.Job, log logrus.FieldLogger) *config.Config {
	if job.Model == "" || job.Model == j.Config.Model {
		return j.Config
	}
	if !slices.Contains(j.allowedModels(), job.Model) {
		log.WithField("model", job.Model).Warn("host: the job asks for a model the operator does not allow; running the default model")
		return j.Config
	}
	cfg := *j.Config // shallow: only Model differs
	cfg.Model = job.Model
	return &cfg
}
