package host

import (
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/sandbox"
	"github.com/odekrun/odek/internal/skills"
)

// withSkillDirs lets confined jobs read (not write) the operator's skill
// directories, which lie in ODEK_HOME by default, a path jobs are
// otherwise denied: a skill's scripts and files are then usable by the
// job's shell as they are through the skill tool (issue 28). Project
// skills need no grant (they are in the job's own tree). A directory the
// sandbox will not grant is named in a warning.
func withSkillDirs(tpl *sandbox.Template, cfg *config.Config, warn func(string)) *sandbox.Template {
	o, err := skills.FromConfig(cfg.Layers.Operator.Raw, cfg.Home, "")
	if err != nil || len(o.OperatorDirs) == 0 {
		return tpl // the skill tool reports the section's error
	}
	var dirs []string
	for _, d := range o.OperatorDirs {
		if exists, _ := sandbox.Host.Kind(d); exists { // the default $ODEK_HOME/skills may not exist
			dirs = append(dirs, d)
		}
	}
	tpl, skipped := tpl.WithReadOnly(dirs, cfg.Home, sandbox.Host)
	for _, s := range skipped {
		if warn != nil {
			warn("sandbox: a skills directory is not readable by confined jobs: " + s)
		}
	}
	return tpl
}
