package main

import (
	"github.com/odekrun/odek/bot"
	"github.com/odekrun/odek/internal/config"
	"github.com/odekrun/odek/internal/skills"
	"github.com/sirupsen/logrus"
)

// skillCommands lists the operator's Agent Skills ($ODEK_HOME/skills, or
// the skills section of $ODEK_HOME/config.json) as chat commands (issue
// 28, docs/SKILLS.md). The skills are read by the worker that runs the
// job: in distributed mode the bot and the workers must see the same
// skills directory (compose mounts one volume for both). A project's
// skills are never offered: the bot has no project.
func skillCommands(log logrus.FieldLogger) []bot.SkillCommand {
	cfg, _, err := config.Load(config.Options{})
	if err != nil {
		log.WithError(err).Warn("odek-bot: odek's configuration could not be read; no skill commands")
		return nil
	}
	o, err := skills.FromConfig(cfg.Layers.Operator.Raw, cfg.Home, "")
	if err != nil {
		log.WithError(err).Warn("odek-bot: skills section; no skill commands")
		return nil
	}
	set, warnings := skills.Load(o)
	for _, w := range warnings {
		log.Warn("odek-bot: skills: " + w)
	}
	cmds := set.Commands(bot.BuiltinCommands(), 0)
	if set.Len() > 0 {
		log.WithFields(logrus.Fields{"skills": set.Len(), "commands": len(cmds)}).Info("odek-bot: skills offered as commands")
	}
	return cmds
}
